"""Host side of the split-KV combine kernel (cuda_src/attention/combine.cu).

The forward's split variant (varlen.py, num_splits > 1) writes, per split s, O_s (num_splits,
total_q, Hq, Dv) f32 normalised over the split's keys and LSE_s (num_splits, Hq, total_q) f32; the
combine merges them into out (total_q, Hq, Dv) in the input dtype and lse (Hq, total_q), both written
through strides with rows in groups (a decode step's own layout: see varlen.py's grouped rows), adding
a learnable sink's exp(sink) to the denominator once. It walks each sequence's rows through
cu_seqlens_q / seqused_q, like the forward, so rows of no sequence keep what the caller put there.
"""
from __future__ import annotations

import dataclasses
import functools

from ..runtime import launch
from ..runtime.compile import KernelSpec
from ..runtime.params import ParamStruct
from ..variants import DTYPES

THREADS = 128            # kThreads in combine.cu: one warp per (row, head)
MAX_SEQUENCES = 65535    # grid.y is the sequence: CUDA's limit on it
PAIRS_PER_CTA = THREADS // 32

COMBINE_PARAMS = ParamStruct("fa3lite::attn::combine::CombineParams", (
    ("o_accum", "ptr"), ("lse_accum", "ptr"), ("out", "ptr"), ("lse", "ptr"), ("sink", "ptr"),
    ("cu_seqlens_q", "ptr"), ("seqused_q", "ptr"),
    ("out_row_stride", "i64"), ("out_member_stride", "i64"), ("out_head_stride", "i64"),
    ("lse_row_stride", "i64"), ("lse_member_stride", "i64"), ("lse_head_stride", "i64"),
    ("total_q", "i32"), ("num_heads", "i32"), ("num_splits", "i32"), ("row_group", "i32"),
))


# what a call fills in: the addresses leading the block (launch.Prepared)
HEAD = COMBINE_PARAMS.head("o_accum", "lse_accum", "out", "lse", "sink", "cu_seqlens_q", "seqused_q")


@dataclasses.dataclass(frozen=True)
class CombineVariant:
    """One combine kernel: the output dtype and O's head dim (the tensor's, e.g. 128 for (192, 128))."""

    dtype: str
    head_dim_v: int

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {self.dtype!r}")
        if self.head_dim_v <= 0 or self.head_dim_v % 2:
            raise ValueError(f"head_dim_v must be a positive even number, got {self.head_dim_v}")

    def spec(self) -> KernelSpec:
        return KernelSpec("attention/combine.cu", "fa3lite_combine", (
            ("FA3LITE_DTYPE_BF16", "1" if self.dtype == "bf16" else "0"),
            ("FA3LITE_HEAD_DIM_V", str(self.head_dim_v)),
        ) + COMBINE_PARAMS.layout_defines())


def all_combine_variants() -> list[CombineVariant]:
    """Every combine kernel a split forward can need (each V head dim of variants.HEAD_DIM_PAIRS)."""
    from ..variants import HEAD_DIM_PAIRS
    return [CombineVariant(t, dv) for t in DTYPES for dv in sorted({dv for _, dv in HEAD_DIM_PAIRS})]


@functools.cache
def loaded(variant: CombineVariant, device_index: int) -> launch.Loaded:
    return launch.load(variant.spec(), device_index, 0)


def grid(batch: int, max_seqlen_q: int, num_heads: int) -> tuple[int, int, int]:
    """One warp per (row, head) of the longest sequence, one grid row per sequence."""
    return (-(-max_seqlen_q * num_heads // PAIRS_PER_CTA), batch, 1)
