"""Hardening on one Hopper GPU: direct op calls with bad inputs, any thread at any time, the caller's
context and stream respected, double backward and frozen inputs on the kernel path, runtime failures
falling back. (Several GPUs: tests/test_multi_gpu.py; the long random stress run:
tests/test_stress_gpu.py.)"""
from __future__ import annotations

import concurrent.futures
import threading
import warnings

import pytest
import torch

pytestmark = pytest.mark.gpu
if not (torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)):
    pytest.skip("needs a Hopper (sm_90) GPU", allow_module_level=True)

import fa3lite  # noqa: E402
from fa3lite.hopper import bwd as hopper_bwd, fwd as hopper  # noqa: E402
from fa3lite.runtime import cache, cdriver, driver, launch  # noqa: E402
from conftest import assert_close_fa3, fa3_atol, ref_attention  # noqa: E402


def _inputs(b, sq, sk, hq, hk, d, dtype=torch.bfloat16, device="cuda", seed=0):
    g = torch.Generator(device=device).manual_seed(seed)
    mk = lambda *s: torch.randn(*s, generator=g, device=device, dtype=torch.float32).to(dtype)  # noqa: E731
    return mk(b, sq, hq, d), mk(b, sk, hk, d), mk(b, sk, hk, d), mk(b, sq, hq, d)


def _run(q, k, v, dout, causal, deterministic=True):
    """(out, lse, dq, dk, dv) through flash_attn_func on the kernels."""
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    out, lse = fa3lite.flash_attn_func(*leaves, causal=causal, deterministic=deterministic, return_lse=True,
                                       backend="fa3lite")
    return (out, lse, *torch.autograd.grad(out, leaves, dout))


def _assert_matches_reference(results, q, k, v, dout, causal):
    """FA3's rule for (out, lse, dq, dk, dv) against the float64 reference."""
    offset = k.shape[1] - q.shape[1]
    want = {}
    for kind, cdt in (("ref", torch.float64), ("pt", q.dtype)):
        leaves = [t.detach().to(cdt).requires_grad_() for t in (q, k, v)]
        o, lse = ref_attention(*leaves, None, causal, offset, dtype=cdt)
        want[kind] = (o, lse.float() if kind == "pt" else lse, *torch.autograd.grad(o, leaves, dout.to(cdt)))
    for name, got, r, p in zip(("out", "lse", "dq", "dk", "dv"), results, want["ref"], want["pt"]):
        assert_close_fa3(got, r, p, fa3_atol(r), name)


def _forget_loaded_kernels():
    """As if no kernel had been compiled or loaded in this process."""
    cache.clear_memory_cache()
    hopper._loaded.cache_clear()
    hopper_bwd._kernels.cache_clear()
    with launch._lock:
        launch._loaded.clear()
        launch._failed.clear()


# ---------------------------------------------------------------- direct calls never launch on bad input

@pytest.mark.parametrize("case", ["k_fp16", "kv_d64", "hk_above_hq", "dout_shape", "out_shape", "lse_shape",
                                  "lse_on_cpu"])
def test_direct_ops_refuse_bad_cuda_inputs(case):
    q, k, v, dout = _inputs(1, 130, 150, 4, 2, 128)
    out, lse = torch.ops.fa3lite.fwd(q, k, v, 0.1, False, 0, False, "fa3lite")
    fwd_args = {"k_fp16": (q, k.half(), v.half()), "kv_d64": (q, k[..., :64], v[..., :64]),
                "hk_above_hq": (q[:, :, :1], k, v)}.get(case)
    with pytest.raises(fa3lite.InputError):
        if fwd_args is not None:
            torch.ops.fa3lite.fwd(*fwd_args, 0.1, False, 0, False, "fa3lite")
        else:
            bad = {"dout_shape": dict(dout=dout[:, :129]), "out_shape": dict(out=out[..., :64]),
                   "lse_shape": dict(lse=lse[:, :2]), "lse_on_cpu": dict(lse=lse.cpu())}[case]
            args = dict(dout=dout, out=out, lse=lse) | bad
            torch.ops.fa3lite.bwd(args["dout"], q, k, v, args["out"], args["lse"], 0.1, False, 0, False, "fa3lite")
    torch.cuda.synchronize()   # nothing was launched that could fault or hang


# ---------------------------------------------------------------- any thread, any number at once

def test_threads_first_call_new_variants_at_once(tmp_path, monkeypatch):
    """Eight threads start together, each the first caller of a variant (two per variant), in a
    process where nothing was compiled yet; every result is checked."""
    monkeypatch.setenv("FA3LITE_CACHE_DIR", str(tmp_path))
    _forget_loaded_kernels()
    configs = [(64, False), (128, True), (256, False), (128, False)] * 2
    barrier = threading.Barrier(len(configs))
    errors, results = [], {}

    def work(i, d, causal):
        try:
            q, k, v, dout = _inputs(1, 200, 333, 4, 2, d, seed=i % 4)
            barrier.wait()
            results[i] = (_run(q, k, v, dout, causal), (q, k, v, dout, causal))
            torch.cuda.synchronize()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(f"thread {i}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=work, args=(i, d, c)) for i, (d, c) in enumerate(configs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    for i, (res, (q, k, v, dout, causal)) in results.items():
        _assert_matches_reference(res, q, k, v, dout, causal)
        twin = results[(i + 4) % 8][0]
        assert all(torch.equal(a, b) for a, b in zip(res, twin)), f"threads {i} and {(i + 4) % 8} differ"


def test_thread_pool_many_calls_bitwise_equal_to_the_main_thread():
    cases = [(d, c, sq) for d in (64, 128, 256) for c in (False, True) for sq in (1, 77, 300)]
    inputs = {case: _inputs(2, case[2], 190, 6, 3, case[0], seed=n) for n, case in enumerate(cases)}
    want = {case: _run(*inputs[case], case[1]) for case in cases}

    def call(case):
        with torch.cuda.stream(torch.cuda.Stream()):
            got = _run(*inputs[case], case[1])
        torch.cuda.synchronize()
        return case, got

    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        for case, got in pool.map(call, cases * 12):
            assert all(torch.equal(a, b) for a, b in zip(got, want[case])), case


def _driver_calls_only(q):
    """fa3lite's own driver calls and nothing of torch's: a tensor-map encode and a kernel load, each a
    cache miss, so each reaches the driver."""
    from fa3lite.runtime import tma
    from fa3lite.variants import FwdVariant

    tma._cache.clear()
    tma.bshd_map(q, 64)
    spec = FwdVariant(64, "fp16", True, debug=True).spec()
    launch._loaded.pop((spec, q.device.index, 1024), None)
    launch.load(spec, q.device.index, 1024)


def test_a_fresh_thread_keeps_no_context_current():
    q, *_ = _inputs(1, 64, 64, 2, 2, 64)
    torch.cuda.synchronize()
    seen = {}

    def work():
        seen["before"] = cdriver.current_context()
        try:
            _driver_calls_only(q)
        except BaseException as exc:  # noqa: BLE001
            seen["error"] = repr(exc)
        seen["after"] = cdriver.current_context()

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert seen == {"before": 0, "after": 0}, seen


def test_a_context_another_library_pushed_stays_current():
    from cuda.bindings import driver as cu

    q, *_ = _inputs(1, 64, 64, 2, 2, 64)
    torch.cuda.synchronize()
    dev = driver.check(cu.cuDeviceGet(torch.cuda.current_device()))
    try:
        result = cu.cuCtxCreate(None, 0, dev)
    except TypeError:   # older bindings: cuCtxCreate(flags, dev)
        result = cu.cuCtxCreate(0, dev)
    ctx = driver.check(result)                           # created and made current (pushed)
    try:
        assert cdriver.current_context() == int(ctx)
        _driver_calls_only(q)
        assert cdriver.current_context() == int(ctx)
    finally:
        driver.check(cu.cuCtxDestroy(ctx))
    assert cdriver.current_context() == driver.primary_context(q.device.index)


def test_the_current_stream_is_honoured():
    """The default stream sleeps; the call on a side stream finishes long before it, so it ran there."""
    q, k, v, dout = _inputs(1, 256, 256, 4, 4, 128)
    want = _run(q, k, v, dout, True)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    torch.cuda._sleep(2_000_000_000)            # ~1 s of spinning on the default stream
    with torch.cuda.stream(side):
        got = _run(q, k, v, dout, True)
        done = torch.cuda.Event()
        done.record(side)
    done.synchronize()
    assert not torch.cuda.current_stream().query(), "the default stream should still be sleeping"
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    torch.cuda.synchronize()


# ---------------------------------------------------------------- autograd edges on the kernel path

def test_double_backward_on_the_kernel_path_matches_the_reference():
    q, k, v, dout = _inputs(1, 70, 90, 4, 2, 64, dtype=torch.bfloat16)
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    out = fa3lite.flash_attn_func(*leaves, causal=True, backend="fa3lite")
    grads = torch.autograd.grad(out, leaves, dout, create_graph=True)
    assert all(t.grad_fn is not None for t in grads)
    second = torch.autograd.grad(sum((g.float() ** 2).sum() for g in grads), leaves)
    refs = {}
    for kind, cdt in (("ref", torch.float64), ("pt", torch.bfloat16)):
        ls = [t.detach().to(cdt).requires_grad_() for t in (q, k, v)]
        o, _ = ref_attention(*ls, None, True, 90 - 70, dtype=cdt)
        gs = torch.autograd.grad(o, ls, dout.to(cdt), create_graph=True)
        refs[kind] = torch.autograd.grad(sum((g.float() ** 2).sum() for g in gs), ls)
    for name, got, r, p in zip(("d2q", "d2k", "d2v"), second, refs["ref"], refs["pt"]):
        assert_close_fa3(got, r, p, fa3_atol(r), name)


def test_frozen_kv_with_gqa_allocates_no_dkv_buffers():
    q, k, v, dout = _inputs(2, 1024, 4096, 16, 2, 128)
    f32_dkv_bytes = 2 * 4096 * 16 * 128 * 4                 # one per-query-head f32 dK buffer
    leaves = q.detach().requires_grad_()
    out = fa3lite.flash_attn_func(leaves, k, v, backend="fa3lite")
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    (dq,) = torch.autograd.grad(out, leaves, dout)
    torch.cuda.synchronize()
    extra = torch.cuda.max_memory_allocated() - base
    assert extra < f32_dkv_bytes, f"backward of a frozen-K/V call allocated {extra} bytes"
    want = _run(q, k, v, dout, False)[2]
    torch.testing.assert_close(dq, want, rtol=0, atol=2e-2)


# ---------------------------------------------------------------- runtime failures fall back (auto)

def test_module_load_failure_falls_back_once_and_is_remembered(monkeypatch, tmp_path):
    from fa3lite.runtime.compile import Compiled

    monkeypatch.setenv("FA3LITE_CACHE_DIR", str(tmp_path))
    _forget_loaded_kernels()
    loads = []

    def garbage(spec):
        loads.append(spec)
        return Compiled(cubin=b"\x7fELF not a cubin", log="")

    monkeypatch.setattr(cache, "get", garbage)
    checks_mod = fa3lite.checks
    checks_mod.reset_fallback_warnings()
    q, k, v, _ = _inputs(1, 100, 100, 2, 2, 64, dtype=torch.float16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outs = [fa3lite.flash_attn_func(q, k, v) for _ in range(3)]
    shown = [str(w.message) for w in caught if issubclass(w.category, fa3lite.FallbackWarning)]
    assert len(shown) == 1 and "CUDA_ERROR" in shown[0], shown
    assert len(loads) == 1
    ref, _ = ref_attention(q, k, v)
    pt, _ = ref_attention(q, k, v, dtype=q.dtype)
    for out in outs:
        assert_close_fa3(out, ref, pt, fa3_atol(ref), "out")
    with pytest.raises(launch.KernelUnavailable, match="CUDA_ERROR"):
        fa3lite.flash_attn_func(q, k, v, backend="fa3lite")
    monkeypatch.undo()
    _forget_loaded_kernels()
