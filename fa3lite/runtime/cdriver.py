"""The few driver calls on the per-launch path, made through ctypes straight into libcuda.

cuda.bindings builds Python objects for every argument (a tensor-map encode takes ~20 of them); on
the hot path of a small attention call that dominated the host time. These wrappers pass plain C
arrays and integers. Loading libcuda happens on first use, so CPU-only machines never touch it.
"""
from __future__ import annotations

import ctypes
import functools

from .driver import CudaDriverError

_u64p = ctypes.POINTER(ctypes.c_uint64)
_u32p = ctypes.POINTER(ctypes.c_uint32)


@functools.cache
def _lib():
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuTensorMapEncodeTiled.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
                                           _u64p, _u64p, _u32p, _u32p,
                                           ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.cuLaunchKernel.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                                   ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                                   ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.cuCtxGetCurrent.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    lib.cuCtxSetCurrent.argtypes = [ctypes.c_void_p]
    for f in ("cuTensorMapEncodeTiled", "cuLaunchKernel", "cuCtxGetCurrent", "cuCtxSetCurrent"):
        getattr(lib, f).restype = ctypes.c_int
    return lib


def _check(err: int, what: str) -> None:
    if err:
        from cuda.bindings import driver

        _, name = driver.cuGetErrorName(driver.CUresult(err))
        raise CudaDriverError(f"{what} failed with CUDA driver error {name.decode() if name else err}")


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
           "cuTensorMapEncodeTiled")


def current_context() -> int:
    ctx = ctypes.c_void_p()
    _check(_lib().cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
    return ctx.value or 0


def set_context(ctx: int) -> None:
    _check(_lib().cuCtxSetCurrent(ctx), "cuCtxSetCurrent")


def launch(function: int, grid, block: int, smem: int, stream: int, params_addr: int) -> None:
    """cuLaunchKernel of a kernel with one by-value parameter block at ``params_addr``."""
    argv = (ctypes.c_void_p * 1)(params_addr)
    _check(_lib().cuLaunchKernel(function, grid[0], grid[1], grid[2], block, 1, 1, smem, stream, argv, None),
           "cuLaunchKernel")
