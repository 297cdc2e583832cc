"""The driver calls fa3lite makes on the hot path, mostly through ctypes straight into libcuda.

cuda.bindings builds Python objects for every argument (a tensor-map encode takes ~20 of them); on
the hot path of a small attention call that dominated the host time. These wrappers pass plain C
arrays and integers. The launch is the exception: cuda.bindings' cuLaunchKernel (compiled Cython)
costs less than ctypes converting its eleven arguments (tools/launch_ab.py: 5.6 vs 8.3 us a launch
on the H100 machine). Loading libcuda happens on first use, so CPU-only machines never touch it.
"""
from __future__ import annotations

import ctypes
import functools

from .driver import CudaDriverError

_u64p = ctypes.POINTER(ctypes.c_uint64)
_u32p = ctypes.POINTER(ctypes.c_uint32)
_vpp = ctypes.POINTER(ctypes.c_void_p)
_cstrp = ctypes.POINTER(ctypes.c_char_p)

# name -> argument types; every function returns a CUresult (int)
_SIGNATURES = {
    "cuInit": [ctypes.c_uint],
    "cuDeviceGet": [ctypes.POINTER(ctypes.c_int), ctypes.c_int],
    "cuDevicePrimaryCtxRetain": [_vpp, ctypes.c_int],
    "cuTensorMapEncodeTiled": [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
                               _u64p, _u64p, _u32p, _u32p,
                               ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int],
    "cuCtxGetCurrent": [_vpp],
    "cuCtxPushCurrent": [ctypes.c_void_p],
    "cuCtxPopCurrent": [_vpp],
    "cuGetErrorName": [ctypes.c_int, _cstrp],
    "cuGetErrorString": [ctypes.c_int, _cstrp],
}


# cuda.h maps these names to versioned symbols; the bare symbols are the legacy ABI. The legacy
# cuCtxPushCurrent only accepts a context that is current on no thread, so pushing the primary
# context (current on torch's thread) from another thread or over another library's context fails.
_SYMBOLS = {"cuCtxPushCurrent": "cuCtxPushCurrent_v2", "cuCtxPopCurrent": "cuCtxPopCurrent_v2"}


class _Driver:
    """libcuda's functions under their API names, typed from _SIGNATURES."""

    def __init__(self, lib: ctypes.CDLL):
        for name, argtypes in _SIGNATURES.items():
            fn = getattr(lib, _SYMBOLS.get(name, name))
            fn.argtypes = argtypes
            fn.restype = ctypes.c_int
            setattr(self, name, fn)


@functools.cache
def _lib() -> _Driver:
    return _Driver(ctypes.CDLL("libcuda.so.1"))


def describe(err: int) -> str:
    """'CUDA_ERROR_NAME (code N): description'; codes this driver does not know keep their number."""
    name, desc = ctypes.c_char_p(), ctypes.c_char_p()
    try:
        lib = _lib()
        known = lib.cuGetErrorName(err, ctypes.byref(name)) == 0 and name.value
        if known:
            lib.cuGetErrorString(err, ctypes.byref(desc))
    except OSError:  # no libcuda: nothing to look the code up in
        known = False
    if not known:
        return f"unknown CUDA driver error (code {err})"
    text = f"{name.value.decode()} (code {err})"
    return f"{text}: {desc.value.decode()}" if desc.value else text


def _check(err: int, what: str) -> None:
    if err:
        raise CudaDriverError(f"{what} failed: {describe(err)}")


# Enum values from cuda.h (CUtensorMapDataType etc.); checked against cuda.bindings in the tests.
DTYPE_FLOAT16, DTYPE_FLOAT32, DTYPE_BFLOAT16 = 6, 7, 9
INTERLEAVE_NONE = 0
SWIZZLE_NONE, SWIZZLE_128B = 0, 3
L2_PROMOTION_256B = 3
OOB_FILL_NONE = 0


def encode_tiled(out_addr: int, dtype_enum: int, ptr: int, dims, strides_bytes, box, swizzle: int) -> None:
    """cuTensorMapEncodeTiled into the 128 bytes at ``out_addr`` (64-byte aligned).

    ``dims``/``box`` innermost first; ``strides_bytes`` for dims 1..rank-1; element strides all 1.
    """
    rank = len(dims)
    g_dim = (ctypes.c_uint64 * rank)(*dims)
    g_str = (ctypes.c_uint64 * max(rank - 1, 1))(*strides_bytes)
    b_dim = (ctypes.c_uint32 * rank)(*box)
    e_str = (ctypes.c_uint32 * rank)(*([1] * rank))
    _check(_lib().cuTensorMapEncodeTiled(out_addr, dtype_enum, rank, ptr, g_dim, g_str, b_dim, e_str,
                                         INTERLEAVE_NONE, swizzle, L2_PROMOTION_256B, OOB_FILL_NONE),
           f"cuTensorMapEncodeTiled (address {ptr:#x}, dims {list(dims)}, strides {list(strides_bytes)} "
           f"bytes, box {list(box)})")


def primary_context(device_index: int) -> int:
    """cuDevicePrimaryCtxRetain of a device (cuInit first); the handle as an int."""
    lib = _lib()
    _check(lib.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    _check(lib.cuDeviceGet(ctypes.byref(dev), device_index), f"cuDeviceGet({device_index})")
    ctx = ctypes.c_void_p()
    _check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), f"cuDevicePrimaryCtxRetain(cuda:{device_index})")
    return ctx.value


def current_context() -> int:
    ctx = ctypes.c_void_p()
    _check(_lib().cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
    return ctx.value or 0


def push_context(ctx: int) -> None:
    _check(_lib().cuCtxPushCurrent(ctx), "cuCtxPushCurrent")


def pop_context() -> int:
    ctx = ctypes.c_void_p()
    _check(_lib().cuCtxPopCurrent(ctypes.byref(ctx)), "cuCtxPopCurrent")
    return ctx.value or 0


_functions: dict[int, object] = {}   # CUfunction handle -> its cuda.bindings wrapper


@functools.cache
def _bindings():
    """cuda.bindings.driver, imported on the first launch (not per launch)."""
    from cuda.bindings import driver

    return driver


def function(handle: int):
    """The cuda.bindings CUfunction of a kernel handle (made once per kernel)."""
    fn = _functions.get(handle)
    if fn is None:
        fn = _functions[handle] = _bindings().CUfunction(handle)
    return fn


def stream(handle: int):
    """The cuda.bindings CUstream of a raw stream handle."""
    return _bindings().CUstream(handle)


def kernel_launcher():
    """cuda.bindings' cuLaunchKernel itself, for callers that launch often (launch.Prepared): one
    Python call a launch. Returns a one-tuple (CUresult,)."""
    return _bindings().cuLaunchKernel


def dependent_launch_config(grid, block: int, smem: int):
    """A cuLaunchKernelEx configuration whose kernel may start while the previous kernel on its stream
    finishes (programmatic dependent launch: CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION).
    The kernel waits for that one's results itself (griddepcontrol.wait); its hStream is set per launch."""
    drv = _bindings()
    config = drv.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = grid
    config.blockDimX, config.blockDimY, config.blockDimZ = block, 1, 1
    config.sharedMemBytes = smem
    attr = drv.CUlaunchAttribute()
    attr.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    attr.value.programmaticStreamSerializationAllowed = 1
    config.attrs = [attr]
    config.numAttrs = 1
    return config


def launch_dependent(fn, config, stream_obj, argv: int) -> int:
    """cuLaunchKernelEx of a kernel (its cuda.bindings CUfunction) with one by-value parameter block
    under a dependent_launch_config, on a cuda.bindings CUstream. Returns the CUresult as an int."""
    config.hStream = stream_obj
    (err,) = _bindings().cuLaunchKernelEx(config, fn, argv, 0)
    return int(err)


def launch(handle: int, grid, block: int, smem: int, stream_handle: int, argv: int) -> int:
    """cuLaunchKernel of a kernel with one by-value parameter block, from raw kernel and stream
    handles; ``argv`` is the address of its kernelParams array (one pointer to the block). Returns the
    CUresult as an int (the caller knows the kernel's name for the message)."""
    (err,) = kernel_launcher()(function(handle), grid[0], grid[1], grid[2], block, 1, 1, smem, stream(stream_handle),
                               argv, 0)
    return int(err)
