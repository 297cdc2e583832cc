"""Host side of the KV-cache append kernel (cuda_src/attention/kv_append.cu): the new K and V rows of a
flash_attn_with_kvcache call written into the cache in place, one launch for both tensors.

    append_plan(k_cache, v_cache, k, v, cache_seqlens, batch_idx, page_table) -> plan or None
    plan(k_cache, v_cache, k, v, cache_seqlens, batch_idx, page_table[, seqused])   (tensors of that signature)

k_cache, v_cache: (B_cache, S_cache, Hk, D[v]), or with page_table (num_pages, page_size, Hk, D[v]),
the leading two dims contiguous with each other; k, v: (B, S_new, Hk, D[v]); cache_seqlens an int or
int32 (B,) (the append positions); batch_idx None or int32/int64 (B,); page_table None or int32
(B, pages). The plan takes what fa3lite/kvcache.py validated; None where the kernel cannot copy these
tensors in 16-byte chunks (a 16-bit dtype, the last dim contiguous, addresses and strides multiples of
16 bytes; contiguous index tensors): the caller then appends with torch's ops. Positions past the capacity clamp to the last,
as the torch path's do. seqused: None or int32 (B,), written with cache_seqlens + S_new (torch's int32
add, wrapping), the key lengths of the attention that follows, so that the step needs no torch kernel
for them.
"""
from __future__ import annotations

import functools

import torch

from ..runtime import cdriver, launch
from ..runtime.compile import KernelSpec
from ..runtime.driver import on_device
from ..runtime.params import ParamStruct
from .common import MAX_GRID_X, device_index

THREADS = 128          # kThreads in kv_append.cu
CHUNK = 16             # bytes a thread copies at once
_I32_MAX = (1 << 31) - 1   # the kernel's positions, rows and units are i32 parameters

APPEND_PARAMS = ParamStruct("fa3lite::attn::append::AppendParams", (
    ("k_new", "ptr"), ("v_new", "ptr"), ("k_cache", "ptr"), ("v_cache", "ptr"),
    ("seqlens", "ptr"), ("batch_idx", "ptr"), ("page_table", "ptr"), ("seqused", "ptr"),
    ("k_new_b", "i64"), ("k_new_s", "i64"), ("k_new_h", "i64"),
    ("v_new_b", "i64"), ("v_new_s", "i64"), ("v_new_h", "i64"),
    ("k_cache_row", "i64"), ("k_cache_h", "i64"), ("v_cache_row", "i64"), ("v_cache_h", "i64"),
    ("seqlen", "i32"), ("s_new", "i32"), ("heads", "i32"), ("k_chunks", "i32"), ("v_chunks", "i32"),
    ("capacity", "i32"), ("rows_per_unit", "i32"), ("units", "i32"), ("pages_per_seq", "i32"),
    ("batch_idx_64", "i32"),
))
APPEND_HEAD = APPEND_PARAMS.head("k_new", "v_new", "k_cache", "v_cache", "seqlens", "batch_idx", "page_table",
                                 "seqused")


def append_spec() -> KernelSpec:
    """The one append kernel (it copies bits: no dtype or head-dim variants)."""
    return KernelSpec("attention/kv_append.cu", "fa3lite_kv_append", APPEND_PARAMS.layout_defines())


@functools.cache
def _loaded(device: int) -> launch.Loaded:
    return launch.load(append_spec(), device, 0)


def _chunked(t: torch.Tensor, dims) -> bool:
    """16-bit elements, the last dim contiguous and a whole number of chunks, the address and the
    strides of ``dims`` multiples of a chunk."""
    per_chunk = CHUNK // 2
    return (t.element_size() == 2 and t.stride(-1) == 1 and t.shape[-1] % per_chunk == 0
            and t.data_ptr() % CHUNK == 0 and all(t.stride(d) % per_chunk == 0 for d in dims))


class _AppendPlan:
    """One append launch of a call signature: grid and parameter block built once; a call fills in the
    eight addresses and launches."""

    def __init__(self, k_cache, v_cache, k, v, cache_seqlens, batch_idx, page_table):
        b, s_new, heads = k.shape[:3]
        paged = page_table is not None
        rows_per_unit = k_cache.shape[1]
        self.dev = device_index(k)
        self.prepared = launch.Prepared(_loaded(self.dev), (b * s_new, 1, 1), THREADS, APPEND_PARAMS.pack(
            k_new=0, v_new=0, k_cache=0, v_cache=0, seqlens=0, batch_idx=0, page_table=0, seqused=0,
            k_new_b=k.stride(0), k_new_s=k.stride(1), k_new_h=k.stride(2),
            v_new_b=v.stride(0), v_new_s=v.stride(1), v_new_h=v.stride(2),
            k_cache_row=k_cache.stride(1), k_cache_h=k_cache.stride(2),
            v_cache_row=v_cache.stride(1), v_cache_h=v_cache.stride(2),
            seqlen=cache_seqlens if isinstance(cache_seqlens, int) else 0, s_new=s_new, heads=heads,
            k_chunks=k.shape[3] * 2 // CHUNK, v_chunks=v.shape[3] * 2 // CHUNK,
            capacity=page_table.shape[1] * rows_per_unit if paged else rows_per_unit, rows_per_unit=rows_per_unit,
            units=k_cache.shape[0], pages_per_seq=page_table.shape[1] if paged else 0,
            batch_idx_64=int(batch_idx is not None and batch_idx.dtype == torch.int64)), APPEND_HEAD, self.dev)

    def __call__(self, k_cache, v_cache, k, v, cache_seqlens, batch_idx, page_table, seqused=None) -> None:
        stream = cdriver.stream(launch.stream_handle(self.dev))
        with on_device(self.dev):
            self.prepared.launch(stream, k.data_ptr(), v.data_ptr(), k_cache.data_ptr(), v_cache.data_ptr(),
                                 cache_seqlens.data_ptr() if isinstance(cache_seqlens, torch.Tensor) else 0,
                                 0 if batch_idx is None else batch_idx.data_ptr(),
                                 0 if page_table is None else page_table.data_ptr(),
                                 0 if seqused is None else seqused.data_ptr())


def append_plan(k_cache, v_cache, k, v, cache_seqlens, batch_idx, page_table):
    """The append launch for tensors of this signature, or None where the kernel cannot copy them (the
    module docstring). Raises KernelUnavailable when the kernel cannot be compiled or loaded."""
    capacity = k_cache.shape[1] * (1 if page_table is None else page_table.shape[1])
    indexes = [t for t in (cache_seqlens, batch_idx, page_table) if isinstance(t, torch.Tensor)]
    if not (all(_chunked(t, (0, 1, 2)) for t in (k, v)) and all(_chunked(c, (1, 2)) for c in (k_cache, v_cache))
            and all(t.is_contiguous() for t in indexes) and 0 < k.shape[0] * k.shape[1] <= MAX_GRID_X
            and max(capacity, k_cache.shape[0]) <= _I32_MAX):
        return None
    return _AppendPlan(k_cache, v_cache, k, v, cache_seqlens, batch_idx, page_table)
