"""Driver layer: error messages keep the facts (code numbers, kernel, grid, block, shared memory),
nvrtcVersion's result is checked, and on_device restores whatever context was current."""
from __future__ import annotations

import contextlib
import types

import pytest

from fa3lite.runtime import cdriver, compile as comp, driver, launch


class _FakeDriver:
    """Stands in for libcuda's context calls: a per-thread context stack."""

    def __init__(self, current=0):
        self.stack = [current] if current else []
        self.calls = []

    def current_context(self):
        return self.stack[-1] if self.stack else 0

    def push_context(self, ctx):
        self.calls.append(("push", ctx))
        self.stack.append(ctx)

    def pop_context(self):
        self.calls.append(("pop",))
        return self.stack.pop()


@pytest.fixture
def fake_contexts(monkeypatch):
    def install(current):
        fake = _FakeDriver(current)
        for name in ("current_context", "push_context", "pop_context"):
            monkeypatch.setattr(cdriver, name, getattr(fake, name))
        monkeypatch.setattr(driver, "_primary", {0: 0xA0, 1: 0xA1})
        return fake
    return install


@pytest.mark.parametrize("current", [0, 0xA0, 0xA1, 0xBEEF])   # none, the same, another device, another library
def test_on_device_restores_the_previous_context(fake_contexts, current):
    fake = fake_contexts(current)
    with driver.on_device(0):
        assert fake.current_context() == 0xA0
    assert fake.current_context() == current
    assert fake.calls == ([] if current == 0xA0 else [("push", 0xA0), ("pop",)])


def test_on_device_restores_after_an_exception(fake_contexts):
    fake = fake_contexts(0xA1)
    with pytest.raises(ZeroDivisionError), driver.on_device(0):
        1 / 0
    assert fake.current_context() == 0xA1


def test_unknown_driver_error_codes_keep_their_number():
    assert "code 987654" in cdriver.describe(987654)
    with pytest.raises(driver.CudaDriverError, match="code 987654"):
        driver.check((987654,))


def test_known_driver_error_names_and_number(monkeypatch):
    class Lib:
        def cuGetErrorName(self, err, out):
            out._obj.value = b"CUDA_ERROR_INVALID_VALUE"
            return 0

        def cuGetErrorString(self, err, out):
            out._obj.value = b"invalid argument"
            return 0

    monkeypatch.setattr(cdriver, "_lib", lambda: Lib())
    assert cdriver.describe(1) == "CUDA_ERROR_INVALID_VALUE (code 1): invalid argument"


def test_context_stack_calls_bind_the_current_abi_symbols():
    """cuda.h maps cuCtxPushCurrent/cuCtxPopCurrent to their _v2 symbols; the bare ones are the legacy
    ABI, whose push refuses a context current on another thread (torch's primary context)."""
    class FakeCDLL:
        def __init__(self):
            self.bound = []

        def __getattr__(self, symbol):
            self.bound.append(symbol)
            fn = lambda *args: 0  # noqa: E731
            return fn

    lib = FakeCDLL()
    cdriver._Driver(lib)
    assert "cuCtxPushCurrent_v2" in lib.bound and "cuCtxPopCurrent_v2" in lib.bound
    assert "cuCtxPushCurrent" not in lib.bound and "cuCtxPopCurrent" not in lib.bound
    assert set(cdriver._SIGNATURES) <= {cdriver._SYMBOLS.get(s, s) for s in lib.bound} | set(cdriver._SYMBOLS)


def test_launch_failure_names_kernel_grid_block_and_shared_memory(monkeypatch):
    monkeypatch.setattr(launch, "on_device", lambda index: contextlib.nullcontext())
    monkeypatch.setattr(cdriver, "launch", lambda *args: 701)   # CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    kernel = launch.Loaded(handle=1, smem_bytes=200_000, name="fa3lite_fwd")
    with pytest.raises(driver.CudaDriverError) as info:
        launch.launch(kernel, (4096, 1, 1), 384, b"\0" * 64, 1, 0)
    message = str(info.value)
    for part in ("fa3lite_fwd", "cuda:1", "grid (4096, 1, 1)", "block 384", "200000 bytes of dynamic shared memory",
                 "code 701"):
        assert part in message, message


def test_nvrtc_version_return_code_is_checked(monkeypatch):
    from cuda.bindings import nvrtc

    failing = types.SimpleNamespace(
        nvrtcVersion=lambda: (nvrtc.nvrtcResult.NVRTC_ERROR_INTERNAL_ERROR, 0, 0), nvrtcResult=nvrtc.nvrtcResult)
    monkeypatch.setattr("cuda.bindings.nvrtc", failing)
    monkeypatch.setattr(nvrtc, "nvrtcVersion", failing.nvrtcVersion)
    comp.nvrtc_version.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="nvrtcVersion failed with .*NVRTC_ERROR_INTERNAL_ERROR"):
            comp.nvrtc_version()
    finally:
        monkeypatch.undo()
        comp.nvrtc_version.cache_clear()
    assert comp.nvrtc_version().count(".") == 1


def test_load_failures_are_remembered_per_spec_and_device(monkeypatch, tmp_path):
    from fa3lite.runtime import cache
    from fa3lite.variants import FwdVariant

    monkeypatch.setenv("FA3LITE_CACHE_DIR", str(tmp_path))
    attempts = []

    def broken(spec):
        attempts.append(spec)
        raise comp.CompileError(spec, "error: planted")

    monkeypatch.setattr(cache, "compile_spec", broken)
    cache.clear_memory_cache()
    launch.forget_failures()
    spec = FwdVariant(64, "fp16", True).spec()
    for _ in range(3):
        with pytest.raises(launch.KernelUnavailable, match="planted") as info:
            launch.load(spec, 5, 1024)
    assert len(attempts) == 1
    assert "remembered" in str(info.value) and "cuda:5" in info.value.kernel
    launch.forget_failures()
    cache.clear_memory_cache()


def _loaded():
    return launch.Loaded(handle=1, smem_bytes=200_000, name="fa3lite_bwd")


@pytest.mark.parametrize("which", ["fwd", "pre", "main", "post", "append"])
def test_prepared_launch_packs_the_call_fields_over_the_plan_template(which):
    """The bytes a prepared launch hands the driver are exactly ParamStruct.pack of the whole
    struct with the call's fields (its head) and the plan's (the template) -- for every block the
    plans launch, so the head formats and field order cannot drift from the structs."""
    from fa3lite.hopper import append, bwd, fwd
    from fa3lite.variants import FWD_PARAMS

    params, head = {"fwd": (FWD_PARAMS, fwd.FWD_HEAD), "pre": (bwd.PRE_PARAMS, bwd.PRE_HEAD),
                    "main": (bwd.BWD_PARAMS, bwd.MAIN_HEAD), "post": (bwd.POST_PARAMS, bwd.POST_HEAD),
                    "append": (append.APPEND_PARAMS, append.APPEND_HEAD)}[which]
    types = dict(params.fields)

    def values(seed):
        out = {}
        for i, (name, ftype) in enumerate(params.fields):
            if ftype == "tma":
                out[name] = bytes([(seed + i) % 251]) * 128
            else:
                out[name] = float(seed + i) / 4 if ftype == "f32" else seed * 1000 + i
        return out

    plan, call = values(1), values(7)
    n_head = len(head[1:].replace("128s", "T"))   # fields in the head format: one letter each
    names = [name for name, _ in params.fields[:n_head]]
    prepared = launch.Prepared(_loaded(), (3, 1, 1), 128, params.pack(**plan), head, 0)
    got = bytes(prepared.pack(*(call[n] for n in names)))
    assert got == params.pack(**{**plan, **{n: call[n] for n in names}})
    assert all(types[n] in ("ptr", "tma") for n in names)   # only addresses and maps change per call


def test_param_heads_must_be_leading_fields_without_padding():
    from fa3lite.runtime.params import ParamStruct

    s = ParamStruct("S", (("a", "ptr"), ("n", "i32"), ("b", "ptr")))
    assert s.head("a", "n") == "<Qi"
    with pytest.raises(ValueError, match="leading"):
        s.head("b")
    with pytest.raises(ValueError, match="padding"):
        s.head("a", "n", "b")
    with pytest.raises(ValueError, match="more than"):
        launch.Prepared(_loaded(), (1, 1, 1), 32, b"\0" * 8, "<QQ", 0)


def test_prepared_launch_failure_names_kernel_device_grid_block_and_shared_memory(monkeypatch):
    monkeypatch.setattr(cdriver, "function", lambda handle: handle)
    monkeypatch.setattr(cdriver, "kernel_launcher", lambda: lambda *args: (701,))   # CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    prepared = launch.Prepared(_loaded(), (4096, 1, 1), 384, b"\0" * 64, "<Q", 1)
    with pytest.raises(driver.CudaDriverError) as info:
        prepared.launch(None, 0)
    message = str(info.value)
    for part in ("fa3lite_bwd", "cuda:1", "grid (4096, 1, 1)", "block 384", "200000 bytes of dynamic shared memory",
                 "code 701"):
        assert part in message, message
