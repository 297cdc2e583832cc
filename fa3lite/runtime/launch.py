"""Load cached cubins into a device and launch them on torch's current stream.

Every driver call runs inside ``driver.on_device``: the kernel's device context is current for the
call and the caller's context is restored after it, on whatever thread the call comes from.
"""
from __future__ import annotations

import ctypes
import dataclasses
import functools
import struct
import threading

from ..errors import KernelUnavailable
from . import cache, cdriver, debug
from .compile import KernelSpec
from .driver import CudaDriverError, check, on_device

_PARAM_ALIGN = 64  # TmaDesc members need 64-byte alignment in the copied parameter block


@dataclasses.dataclass(frozen=True)
class Loaded:
    handle: int        # CUfunction as a raw pointer (its module stays loaded for the process)
    smem_bytes: int
    name: str          # the kernel's entry name, for error messages


_loaded: dict[tuple[KernelSpec, int, int], Loaded] = {}
_failed: dict[tuple[KernelSpec, int, int], tuple[str, str]] = {}  # key -> (kernel, cause)
_modules: list[object] = []  # keep CUmodules alive for the life of the process
_lock = threading.Lock()


def load(spec: KernelSpec, device_index: int, smem_bytes: int) -> Loaded:
    """The kernel of ``spec`` loaded on ``device_index`` with its dynamic shared memory limit raised.

    Raises KernelUnavailable (remembered per spec and device) if it cannot be compiled or loaded.
    """
    key = (spec, device_index, smem_bytes)
    hit = _loaded.get(key)
    if hit is not None:
        return hit
    with _lock:
        hit = _loaded.get(key)
        if hit is not None:
            return hit
        failure = _failed.get(key)
        if failure is None:
            try:
                hit = _load(spec, device_index, smem_bytes)
            except Exception as exc:  # noqa: BLE001 - whatever broke, this kernel cannot run here
                failure = (_label(spec, device_index), f"{type(exc).__name__}: {exc}")
                _failed[key] = failure
                raise KernelUnavailable(*failure) from exc
            _loaded[key] = hit
            return hit
    raise KernelUnavailable(failure[0], failure[1] + " (remembered from an earlier call)")


def _label(spec: KernelSpec, device_index: int) -> str:
    """A kernel variant on a device, for messages: entry name, the defines that choose it, device."""
    return f"{spec.name} [{spec.describe()}] on cuda:{device_index}"


def _load(spec: KernelSpec, device_index: int, smem_bytes: int) -> Loaded:
    from cuda.bindings import driver

    compiled = cache.get(spec)
    with on_device(device_index):
        module = check(driver.cuModuleLoadData(compiled.cubin))
        if spec.debug:
            debug.attach(module, _label(spec, device_index), device_index)
        fn = check(driver.cuModuleGetFunction(module, spec.name.encode()))
        check(driver.cuFuncSetAttribute(
            fn, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem_bytes))
    _modules.append(module)
    return Loaded(handle=int(fn), smem_bytes=smem_bytes, name=spec.name)


def forget_failures() -> None:
    """Forget remembered load failures (for tests, or after fixing the environment)."""
    with _lock:
        _failed.clear()


class _Staging(threading.local):
    """Per-thread, 64-byte-aligned parameter block and its one-entry kernelParams array, reused by
    every launch of the thread: the driver copies the parameters during cuLaunchKernel, so the block
    is free again when the call returns."""

    def __init__(self):
        self.size = 0
        self.grow(1024)

    def grow(self, size: int) -> None:
        self.raw = ctypes.create_string_buffer(size + _PARAM_ALIGN)
        self.base = (ctypes.addressof(self.raw) + _PARAM_ALIGN - 1) // _PARAM_ALIGN * _PARAM_ALIGN
        self.view = memoryview((ctypes.c_char * size).from_address(self.base)).cast("B")
        self.argv = (ctypes.c_void_p * 1)(self.base)
        self.argv_addr = ctypes.addressof(self.argv)
        self.size = size


_staging = _Staging()


def staging_block(size: int) -> int:
    """Address of this thread's parameter block, at least ``size`` bytes, for launch_staged: a caller
    may write the parameters there itself instead of packing bytes first."""
    staging = _staging
    if size > staging.size:
        staging.grow(size)
    return staging.base


def staging_view(size: int) -> memoryview:
    """This thread's parameter block (at least ``size`` bytes) as a writable byte view."""
    staging = _staging
    if size > staging.size:
        staging.grow(size)
    return staging.view


def launch(kernel: Loaded, grid: tuple[int, int, int], block: int, params: bytes,
           device_index: int, stream_handle: int) -> None:
    """Launch with one by-value struct parameter (``params``, packed by ParamStruct)."""
    ctypes.memmove(staging_block(len(params)), params, len(params))
    launch_staged(kernel, grid, block, device_index, stream_handle)


def launch_staged(kernel: Loaded, grid: tuple[int, int, int], block: int, device_index: int,
                  stream_handle: int) -> None:
    """Launch with this thread's parameter block (staging_view) as the by-value struct parameter."""
    with on_device(device_index):
        launch_current(kernel, grid, block, device_index, stream_handle)


def launch_current(kernel: Loaded, grid: tuple[int, int, int], block: int, device_index: int,
                   stream_handle: int) -> None:
    """launch_staged for a caller already inside ``on_device(device_index)`` (several launches in a
    row then ask for the current context once)."""
    err = cdriver.launch(kernel.handle, grid, block, kernel.smem_bytes, stream_handle, _staging.argv_addr)
    if err:
        raise CudaDriverError(f"launching kernel {kernel.name} on cuda:{device_index} (grid {tuple(grid)}, "
                              f"block {block}, {kernel.smem_bytes} bytes of dynamic shared memory) failed: "
                              f"{cdriver.describe(err)}")


class Prepared:
    """One kernel's launch for one call signature: grid, block and the parameter block, of which a
    call supplies only the leading fields (addresses and tensor maps, ``head``: a struct format of
    them, e.g. "<128s128s6Q"); the rest is the fixed ``template`` tail. A call packs both into the
    thread's staging block with one precompiled struct and launches: ``launch(stream, *head_values)``
    inside ``on_device`` (the caller's block, so several launches ask for the context once).

    ``dependent``: a programmatic dependent launch (cuLaunchKernelEx): the kernel may start while the
    previous kernel on the stream finishes, running what needs none of its results (reads of inputs
    it does not write) before it waits for them with griddepcontrol.wait; the previous kernel lets it
    start early with griddepcontrol.launch_dependents. The two overlap by the second's start-up."""

    __slots__ = ("kernel", "grid", "threads", "device_index", "dependent", "_pack", "_tail", "_size", "_function",
                 "_driver_launch", "_config")

    def __init__(self, kernel: Loaded, grid: tuple[int, int, int], threads: int, template: bytes, head: str,
                 device_index: int, dependent: bool = False):
        head_bytes = struct.calcsize(head)
        if head_bytes > len(template):
            raise ValueError(f"head {head!r} takes {head_bytes} bytes, more than the {len(template)}-byte block")
        self.kernel, self.grid, self.threads, self.device_index = kernel, tuple(grid), threads, device_index
        self.dependent = dependent
        self._config = None   # dependent: the cuLaunchKernelEx configuration, made on the first launch
        self._tail = template[head_bytes:]
        self._pack = struct.Struct(f"{head}{len(self._tail)}s").pack_into
        self._size = len(template)
        self._function = None   # the cuda.bindings CUfunction, made on the first launch ...
        self._driver_launch = None   # ... and cuLaunchKernel, looked up once

    def _stage(self, head) -> "_Staging":
        """The thread's staging block, holding this launch's parameters: ``head`` then the template's tail."""
        staging = _staging
        if self._size > staging.size:
            staging.grow(self._size)
        self._pack(staging.view, 0, *head, self._tail)
        return staging

    def pack(self, *head) -> memoryview:
        """The parameter bytes a launch with ``head`` hands the driver."""
        return self._stage(head).view[:self._size]

    def launch(self, stream, *head) -> None:
        """``stream``: a cuda.bindings CUstream (cdriver.stream) of torch's current stream."""
        staging = self._stage(head)
        if self._function is None:
            self._function, self._driver_launch = cdriver.function(self.kernel.handle), cdriver.kernel_launcher()
            if self.dependent:
                self._config = cdriver.dependent_launch_config(self.grid, self.threads, self.kernel.smem_bytes)
        if self.dependent:
            err = cdriver.launch_dependent(self._function, self._config, stream, staging.argv_addr)
        else:
            g = self.grid
            (err,) = self._driver_launch(self._function, g[0], g[1], g[2], self.threads, 1, 1, self.kernel.smem_bytes,
                                         stream, staging.argv_addr, 0)
        if err:
            kernel = self.kernel
            raise CudaDriverError(f"launching kernel {kernel.name} on cuda:{self.device_index} (grid {self.grid}, "
                                  f"block {self.threads}, {kernel.smem_bytes} bytes of dynamic shared memory) "
                                  f"failed: {cdriver.describe(int(err))}")


@functools.cache
def _raw_stream():
    """torch's private accessor of the current stream's raw handle (returns the int directly, ~0.3 us;
    torch.cuda.current_stream builds a Stream object first, several us), or None in a torch without it."""
    import torch

    return getattr(torch._C, "_cuda_getCurrentRawStream", None)


def stream_handle(device_index: int) -> int:
    """Raw handle of torch's current stream on a device."""
    raw = _raw_stream()
    if raw is not None:
        return raw(device_index)
    import torch

    return torch.cuda.current_stream(device_index).cuda_stream
