"""TMA tensor maps (CUtensorMap) built from a tensor's real strides.

Attention tiles are loaded as 128-byte-swizzled boxes of 64 columns. A (B, S, H, D) tensor is described
as a 5-D map with dims, innermost first, (64, S, D/64, H, B): the D/64 column blocks get their own
dimension (stride 128 bytes) placed after S, so one copy of a (64, rows, D/64) box lands in shared
memory as [block][row][64 columns], the layout wgmma's descriptors expect.
"""
from __future__ import annotations

import ctypes

from .driver import check

COLS = 64  # bf16/fp16 elements in one 128-byte swizzle row
_MAX_STRIDE = 1 << 40


def _dtype_enum(dtype):
    import torch
    from cuda.bindings import driver

    T = driver.CUtensorMapDataType
    table = {
        torch.bfloat16: T.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        torch.float16: T.CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        torch.float32: T.CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
    }
    return table[dtype]


def encode(ptr: int, dtype, dims: list[int], strides_bytes: list[int], box: list[int],
           swizzle_128b: bool = True) -> bytes:
    """128 bytes of a tiled tensor map. ``dims``/``box`` innermost first; ``strides_bytes`` for dims 1..n-1."""
    from cuda.bindings import driver

    if ptr % 16:
        raise ValueError(f"TMA base address must be 16-byte aligned, got {ptr:#x}")
    for s in strides_bytes:
        if s % 16 or not 0 < s < _MAX_STRIDE:
            raise ValueError(f"TMA strides must be positive multiples of 16 bytes below 2^40, got {strides_bytes}")
    rank = len(dims)
    sw = driver.CUtensorMapSwizzle
    tm = check(driver.cuTensorMapEncodeTiled(
        _dtype_enum(dtype), rank, ptr,
        [driver.cuuint64_t(d) for d in dims],
        [driver.cuuint64_t(s) for s in strides_bytes],
        [driver.cuuint32_t(b) for b in box],
        [driver.cuuint32_t(1)] * rank,
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        sw.CU_TENSOR_MAP_SWIZZLE_128B if swizzle_128b else sw.CU_TENSOR_MAP_SWIZZLE_NONE,
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    ))
    return ctypes.string_at(tm.getPtr(), 128)


def bshd_map(t, box_rows: int, box_col_blocks: int | None = None) -> bytes:
    """Tensor map of a (B, S, H, D) tensor for boxes of ``box_rows`` rows x ``box_col_blocks`` blocks
    of 64 columns (default: all D columns).

    D must be a multiple of 64; the last dim must be contiguous. Dims of size 1 get a nominal stride
    (it is never used) so that views with arbitrary strides there still encode.
    """
    B, S, H, D = t.shape
    sb, ss, sh, sd = t.stride()
    if sd != 1:
        raise ValueError(f"last dimension must be contiguous (stride 1), got stride {sd}")
    if D % COLS:
        raise ValueError(f"head dim must be a multiple of {COLS}, got {D}")
    es = t.element_size()
    nominal = D * es

    def stride(n: int, s: int) -> int:
        return nominal if n == 1 else s * es

    dims = [COLS, S, D // COLS, H, B]
    strides = [stride(S, ss), COLS * es, stride(H, sh), stride(B, sb)]
    box = [COLS, box_rows, box_col_blocks or D // COLS, 1, 1]
    return encode(t.data_ptr(), t.dtype, dims, strides, box)
