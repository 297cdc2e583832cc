"""TMA tensor maps (CUtensorMap) built from a tensor's real strides.

Attention tiles are loaded as 128-byte-swizzled boxes of 64 columns. A (B, S, H, D) tensor is described
as a 5-D map with dims, innermost first, (64, S, D/64, H, B): the D/64 column blocks get their own
dimension (stride 128 bytes) placed after S, so one copy of a (64, rows, D/64) box lands in shared
memory as [block][row][64 columns], the layout wgmma's descriptors expect.
"""
from __future__ import annotations

import ctypes
import threading

from . import cdriver
from .driver import on_device

_lock = threading.Lock()  # guards the shared scratch buffer (autograd may call from another thread)

COLS = 64  # bf16/fp16 elements in one 128-byte swizzle row
MAP_BYTES = 128  # one encoded tensor map (CUtensorMap)
# The map of a parameter field the kernel variant never reads through (zeros, encoded nowhere).
BLANK_MAP = bytes(MAP_BYTES)
_MAX_STRIDE = 1 << 40


_CACHE_LIMIT = 4096  # encoded maps kept; a map is a pure function of its key, so reuse is exact
_cache: dict[tuple, bytes] = {}
_scratch = ctypes.create_string_buffer(MAP_BYTES + 64)
_scratch_addr = (ctypes.addressof(_scratch) + 63) // 64 * 64


def _dtype_enum(dtype) -> int:
    import torch

    table = {torch.bfloat16: cdriver.DTYPE_BFLOAT16, torch.float16: cdriver.DTYPE_FLOAT16,
             torch.float32: cdriver.DTYPE_FLOAT32}
    return table[dtype]


def encode(ptr: int, dtype, dims, strides_bytes, box,
           device_index: int, swizzle_128b: bool = True) -> bytes:
    """128 bytes of a tiled tensor map of memory on ``device_index``. ``dims``/``box`` innermost first;
    ``strides_bytes`` for dims 1..n-1."""
    key = (ptr, dtype, tuple(dims), tuple(strides_bytes), tuple(box), swizzle_128b)
    hit = _cache.get(key)
    if hit is not None:
        return hit
    if ptr % 16:
        raise ValueError(f"TMA base address must be 16-byte aligned, got {ptr:#x}")
    for s in strides_bytes:
        if s % 16 or not 0 < s < _MAX_STRIDE:
            raise ValueError(f"TMA strides must be positive multiples of 16 bytes below 2^40, got {strides_bytes}")
    swizzle = cdriver.SWIZZLE_128B if swizzle_128b else cdriver.SWIZZLE_NONE
    with _lock, on_device(device_index):
        cdriver.encode_tiled(_scratch_addr, _dtype_enum(dtype), ptr, dims, strides_bytes, box, swizzle)
        blob = ctypes.string_at(_scratch_addr, MAP_BYTES)
    if len(_cache) >= _CACHE_LIMIT:
        _cache.clear()
    _cache[key] = blob
    return blob


def bshd_geometry(shape, stride, element_size: int, box_rows: int, box_col_blocks: int | None = None,
                  kernel_dim: int | None = None):
    """(dims, strides_bytes, box) of the tensor map of a (B, S, H, D) tensor with these sizes and
    element strides, for boxes of ``box_rows`` rows x ``box_col_blocks`` blocks of 64 columns (default:
    all D columns), the last dim contiguous. D a multiple of 64: a 5-D map (64 columns, rows, column
    blocks, heads, batch); otherwise (96, 192) a 4-D map (D columns, rows, heads, batch) with boxes of
    one 64-column block. ``kernel_dim``: the head dim of the kernel that reads the map; one above D
    (a padded head dim: 192 run as 256, or V's 128 beside Q/K's 192) also gets the 4-D map. Dims of size 1 get a
    nominal stride (it is never used) so that views with arbitrary strides there still encode."""
    B, S, H, D = shape
    sb, ss, sh, sd = stride
    if sd != 1:
        raise ValueError(f"last dimension must be contiguous (stride 1), got stride {sd}")
    if D % 8 or kernel_dim is not None and (kernel_dim % COLS or not 0 < D <= kernel_dim):
        raise ValueError(f"head dim {D}: expected a multiple of 8 up to a kernel head dim that is a multiple of "
                         f"{COLS}, got kernel head dim {kernel_dim}")
    kernel_dim = kernel_dim or D
    nominal = kernel_dim * element_size

    def nbytes(n: int, s: int) -> int:
        return nominal if n == 1 else s * element_size

    if kernel_dim != D:
        # a padded head dim (96, 192): 4-D, one box per 64-column block; the columns past D are
        # outside the tensor (zeros on load, clipped on store; cuda_src/attention/tile_io.cuh)
        return (D, S, H, B), (nbytes(S, ss), nbytes(H, sh), nbytes(B, sb)), (COLS, box_rows, 1, 1)
    dims = (COLS, S, D // COLS, H, B)
    strides = (nbytes(S, ss), COLS * element_size, nbytes(H, sh), nbytes(B, sb))
    box = (COLS, box_rows, box_col_blocks or D // COLS, 1, 1)
    return dims, strides, box


def grouped_geometry(groups: int, group_rows: int, heads: int, head_dim: int, strides, element_size: int,
                     box_groups: int, kernel_dim: int):
    """(dims, strides_bytes, box) of the tensor map of rows that come in groups (the split kernel's q,
    cuda_src/attention/tile_io.cuh load_groups): row r of head h, column c at element
    (r // group_rows) * strides[0] + (r % group_rows) * strides[1] + h * strides[2] + c, for boxes of
    ``box_groups`` whole groups and one 64-column block. A decode step's queries (B, Sq, Hq, D) in
    place: groups = B * Sq positions, group_rows = the query heads sharing a K/V head, heads = the
    K/V heads; plain rows (total, H, D): group_rows = 1. Dims (64 columns, member, group, head, D/64
    column blocks), or for a padded head dim (D columns, member, group, head)."""
    D = head_dim
    if D % 8 or kernel_dim % COLS or not 0 < D <= kernel_dim:
        raise ValueError(f"head dim {D}: expected a multiple of 8 up to a kernel head dim that is a multiple of "
                         f"{COLS}, got kernel head dim {kernel_dim}")
    group_stride, member_stride, head_stride = strides
    nominal = kernel_dim * element_size

    def nbytes(n: int, s: int) -> int:
        return nominal if n == 1 else s * element_size

    inner = (nbytes(group_rows, member_stride), nbytes(groups, group_stride), nbytes(heads, head_stride))
    if kernel_dim != D:
        return (D, group_rows, groups, heads), inner, (COLS, group_rows, box_groups, 1)
    dims = (COLS, group_rows, groups, heads, D // COLS)
    return dims, inner + (COLS * element_size,), (COLS, group_rows, box_groups, 1, 1)


def bshd_map(t, box_rows: int, box_col_blocks: int | None = None) -> bytes:
    """Tensor map of a (B, S, H, D) tensor (see bshd_geometry)."""
    dims, strides, box = bshd_geometry(t.shape, t.stride(), t.element_size(), box_rows, box_col_blocks)
    return encode(t.data_ptr(), t.dtype, dims, strides, box, t.device.index)


class MapMaker:
    """Tensor maps of one tensor geometry at any address: encode() for each new address, with the
    last few kept (in a loop the caching allocator hands the same addresses back)."""

    __slots__ = ("dtype", "geometry", "device_index", "_by_ptr")
    _KEEP = 32

    def __init__(self, dtype, geometry, device_index: int):
        self.dtype, self.geometry, self.device_index = dtype, geometry, device_index
        self._by_ptr: dict[int, bytes] = {}

    def __call__(self, ptr: int) -> bytes:
        blob = self._by_ptr.get(ptr)
        if blob is None:
            blob = encode(ptr, self.dtype, *self.geometry, self.device_index)
            if len(self._by_ptr) >= self._KEEP:
                self._by_ptr.clear()
            self._by_ptr[ptr] = blob
        return blob
