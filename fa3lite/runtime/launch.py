"""Load cached cubins into the current device and launch them on torch's current stream."""
from __future__ import annotations

import ctypes
import dataclasses
import threading

from . import cache, cdriver
from .compile import KernelSpec
from .driver import check, make_current

_PARAM_ALIGN = 64  # TmaDesc members need 64-byte alignment in the copied parameter block


@dataclasses.dataclass(frozen=True)
class Loaded:
    handle: int        # CUfunction as a raw pointer (its module stays loaded for the process)
    smem_bytes: int


_loaded: dict[tuple[KernelSpec, int, int], Loaded] = {}
_modules: list[object] = []  # keep CUmodules alive for the life of the process
_lock = threading.Lock()


def load(spec: KernelSpec, device_index: int, smem_bytes: int) -> Loaded:
    """The kernel of ``spec`` loaded on ``device_index`` with its dynamic shared memory limit raised."""
    key = (spec, device_index, smem_bytes)
    hit = _loaded.get(key)
    if hit is not None:
        return hit
    from cuda.bindings import driver

    compiled = cache.get(spec)
    with _lock:
        hit = _loaded.get(key)
        if hit is not None:
            return hit
        make_current(device_index)
        module = check(driver.cuModuleLoadData(compiled.cubin))
        fn = check(driver.cuModuleGetFunction(module, spec.name.encode()))
        check(driver.cuFuncSetAttribute(
            fn, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem_bytes))
        _modules.append(module)
        loaded = Loaded(handle=int(fn), smem_bytes=smem_bytes)
        _loaded[key] = loaded
        return loaded


def launch(kernel: Loaded, grid: tuple[int, int, int], block: int, params: bytes,
           device_index: int, stream_handle: int) -> None:
    """Launch with one by-value struct parameter (``params``, packed by ParamStruct).

    The driver copies the parameter block during the call, so a per-call buffer is enough.
    """
    make_current(device_index)
    raw = ctypes.create_string_buffer(len(params) + _PARAM_ALIGN)
    base = (ctypes.addressof(raw) + _PARAM_ALIGN - 1) // _PARAM_ALIGN * _PARAM_ALIGN
    ctypes.memmove(base, params, len(params))
    cdriver.launch(kernel.handle, grid, block, kernel.smem_bytes, stream_handle, base)


def stream_handle(device_index: int) -> int:
    """Raw handle of torch's current stream on a device. torch's private accessor returns the int
    directly (~0.3 us); torch.cuda.current_stream builds a Stream object first (several us)."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(device_index)
    return torch.cuda.current_stream(device_index).cuda_stream
