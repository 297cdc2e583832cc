"""The decode grid (issue 13): which shapes `python -m fa3lite.bench --decode` runs, and the byte
arithmetic its rows are judged by.

A case is one decode step against a K/V cache:
  q            (B, Sq, Hq, d)  Sq = 1 (a decode step) or 4 (speculative: 4 draft tokens checked at once)
  k/v cache    (B, L, Hk, d)   contiguous, allocated exactly at the cache length L, or
               (B * ceil(L / p), p, Hk, d) pages of p rows with a shuffled (B, ceil(L / p)) page table
  cache_seqlens = L for every batch row (one length per case: SDPA's baseline takes one slice length
  per call, so varied lengths would need a padding mask that changes which SDPA kernels run).
The queries are the newest Sq tokens, causal aligned bottom-right (FlashAttention's decode convention).

Bytes: K/V read = B * L * Hk * d * 2 tensors * element size. q and out are not counted (B * Sq * Hq *
d * element size each: Sq * Hq / (L * Hk) of the K/V together, at most 0.4% at the caches the bandwidth
bar covers, Sq = 4 with Hq/Hk = 64/8 at 8k), nor the extra traffic of an implementation that gathers
pages first (that is its overhead, not work).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

K = 1024
CACHE_LENS = (1 * K, 8 * K, 32 * K, 128 * K)
QUERY_LENS = (1, 4)             # a decode step; 4 speculative tokens verified in one call
BATCHES = (1, 8, 64)
HEAD_CONFIGS = ((32, 8), (64, 8))  # (Hq, Hk): Llama-3-8B-like and -70B-like GQA
HEAD_DIM = 128
CONTIGUOUS = 0                  # the page size that means "no pages": one (B, L, Hk, d) cache
PAGE_SIZES = (16, 64, 256)
LAYOUTS = (CONTIGUOUS,) + PAGE_SIZES
DTYPE_BYTES = {"bf16": 2, "fp16": 2}
KV_TENSORS = 2                  # K and V

# The bars: fa3lite's K/V bandwidth at least this fraction of the copy bandwidth at caches of
# at least BANDWIDTH_BAR_CACHE rows, and at least PEER_BAR times faster than FA4 and cuDNN.
BANDWIDTH_BAR_FRACTION = 0.8
BANDWIDTH_BAR_CACHE = 8 * K
PEER_BAR = 1.1

# The correctness check runs each case at a reduced cache and batch (an fp32 reference of the full
# 128k x 64 case would need tens of GB); the layout, heads and Sq stay the case's own.
CHECK_CACHE_LEN = 1 * K
CHECK_BATCH = 4                 # > 1, so a page table that mixes up batch rows is caught

PRESET_DECODE_FULL = "full"
PRESET_DECODE_QUICK = "quick"
BYTES_PER_GB = 1e9
MS_PER_S = 1e3


@dataclass(frozen=True)
class DecodeSpec:
    """The axes of a decode grid; every combination is one case."""

    query_lens: tuple[int, ...]
    batches: tuple[int, ...]
    cache_lens: tuple[int, ...]
    head_configs: tuple[tuple[int, int], ...]
    page_sizes: tuple[int, ...]
    head_dim: int = HEAD_DIM
    dtype: str = "bf16"


# full: the grid (192 cases). quick: one look at what the bar is about, 8 cases: a decode
# step (Sq = 1) at Hq/Hk 32/8, B = 1 (where only splitting the cache fills the GPU) and B = 8, caches
# 8k and 128k, contiguous and 64-row pages.
DECODE_PRESETS: dict[str, DecodeSpec] = {
    PRESET_DECODE_FULL: DecodeSpec(QUERY_LENS, BATCHES, CACHE_LENS, HEAD_CONFIGS, LAYOUTS),
    PRESET_DECODE_QUICK: DecodeSpec((1,), (1, 8), (8 * K, 128 * K), ((32, 8),), (CONTIGUOUS, 64)),
}


@dataclass(frozen=True)
class DecodeCase:
    """One decode shape: q (batch, sq, heads_q, head_dim) against a cache of cache_len rows per batch
    row, (batch, cache_len, heads_kv, head_dim) contiguous (page_size CONTIGUOUS) or pages of
    page_size rows."""

    sq: int
    batch: int
    cache_len: int
    heads_q: int
    heads_kv: int
    head_dim: int
    page_size: int
    dtype: str = "bf16"

    def __post_init__(self):
        for name in ("sq", "batch", "cache_len", "heads_q", "heads_kv", "head_dim"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}: expected a positive count, got {getattr(self, name)}")
        if self.heads_q % self.heads_kv:
            raise ValueError(f"heads_kv: expected a divisor of heads_q = {self.heads_q}, got {self.heads_kv}")
        if self.page_size < 0:
            raise ValueError(f"page_size: expected {CONTIGUOUS} (contiguous) or a positive row count, "
                             f"got {self.page_size}")
        if self.sq > self.cache_len:
            raise ValueError(f"sq: expected at most cache_len = {self.cache_len} query rows (the queries are "
                             f"the cache's newest tokens), got {self.sq}")
        if self.dtype not in DTYPE_BYTES:
            raise ValueError(f"dtype: expected one of {tuple(DTYPE_BYTES)}, got {self.dtype!r}")

    @property
    def paged(self) -> bool:
        return self.page_size != CONTIGUOUS

    @property
    def layout(self) -> str:
        return f"paged{self.page_size}" if self.paged else "contiguous"

    @property
    def pages_per_seq(self) -> int:
        """Pages each batch row uses (the last one partly filled when page_size does not divide L);
        0 for a contiguous cache."""
        return math.ceil(self.cache_len / self.page_size) if self.paged else 0

    @property
    def kv_bytes(self) -> int:
        """K/V bytes an implementation must read: B * L * Hk * d * 2 tensors * element size."""
        return (self.batch * self.cache_len * self.heads_kv * self.head_dim * KV_TENSORS
                * DTYPE_BYTES[self.dtype])

    @property
    def label(self) -> str:
        return (f"Sq={self.sq} B={self.batch} L={self.cache_len} Hq/Hk={self.heads_q}/{self.heads_kv} "
                f"d={self.head_dim} {self.layout}")

    def reduced(self) -> "DecodeCase":
        """The case at the correctness check's size: cache and batch capped, all else kept."""
        return replace(self, cache_len=max(self.sq, min(self.cache_len, CHECK_CACHE_LEN)),
                       batch=min(self.batch, CHECK_BATCH))


def make_decode_spec(preset: str = PRESET_DECODE_FULL, dtype: str = "bf16") -> DecodeSpec:
    """The preset's grid in `dtype`."""
    if preset not in DECODE_PRESETS:
        raise ValueError(f"preset: expected one of {sorted(DECODE_PRESETS)}, got {preset!r}")
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"dtype: expected one of {tuple(DTYPE_BYTES)}, got {dtype!r}")
    return replace(DECODE_PRESETS[preset], dtype=dtype)


def build_decode_cases(spec: DecodeSpec) -> list[DecodeCase]:
    """Cases ordered by Sq, heads, batch, cache length, then layout (contiguous first), so that a
    shape's layouts sit next to each other in the table."""
    return [
        DecodeCase(sq, batch, length, hq, hk, spec.head_dim, page, spec.dtype)
        for sq in spec.query_lens
        for hq, hk in spec.head_configs
        for batch in spec.batches
        for length in spec.cache_lens
        for page in spec.page_sizes
    ]


def achieved_gbs(nbytes: int, ms: float) -> float:
    """GB/s (1e9 bytes) of moving nbytes in ms milliseconds."""
    if ms <= 0:
        raise ValueError(f"ms: expected a positive time, got {ms}")
    return nbytes / (ms / MS_PER_S) / BYTES_PER_GB


def copy_gbs(nbytes: int, ms: float) -> float:
    """Bandwidth of a device-to-device copy of nbytes that took ms: bytes read plus bytes written."""
    return achieved_gbs(2 * nbytes, ms)
