"""Kernel variants as values: a frozen key per compiled kernel, the tile table, the param layouts."""
from __future__ import annotations

import dataclasses

from .runtime.compile import KernelSpec
from .runtime.params import ParamStruct

HEAD_DIMS = (64, 128, 256)
DTYPES = ("bf16", "fp16")

# Forward tiles per head dim: (kBlockM, kBlockN, K/V stages, intra-warpgroup overlap).
# kBlockM is fixed by the two consumer warpgroups (64 rows each). Chosen by tools/fwd_tune.py on an
# H200 (benchmarks/RESULTS.md, 2026-11-22): d=64 is exp-bound, and a wide 192-key block with the
# serial schedule beat the overlapped one (487 vs 453 TFLOP/s full at 16k); d=128 gains ~7% from the
# overlap (659 vs 615); d=256 keeps S narrow (80 keys) so O (128 f32 registers) and S fit in 240
# registers, and its 64 KB Q tile leaves room for two 80-row K/V stages only.
FWD_TILES = {64: (128, 192, 2, False), 128: (128, 128, 2, True), 256: (128, 80, 2, True)}

FWD_PARAMS = ParamStruct("fa3lite::attn::FwdParams", (
    ("q", "tma"), ("k", "tma"), ("v", "tma"), ("o", "tma"),
    ("lse", "ptr"),
    ("seqlen_q", "i32"), ("seqlen_k", "i32"), ("num_heads_q", "i32"), ("head_group", "i32"),
    ("num_m_blocks", "i32"), ("causal_offset", "i32"),
    ("scale_log2", "f32"),
))


@dataclasses.dataclass(frozen=True)
class FwdVariant:
    """One forward kernel: what the host chooses per call; everything else follows from it."""

    head_dim: int
    dtype: str          # "bf16" | "fp16"
    causal: bool
    debug: bool = False

    def __post_init__(self):
        if self.head_dim not in HEAD_DIMS:
            raise ValueError(f"head_dim must be one of {HEAD_DIMS}, got {self.head_dim}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {self.dtype!r}")

    @property
    def block_m(self) -> int:
        return FWD_TILES[self.head_dim][0]

    @property
    def block_n(self) -> int:
        return FWD_TILES[self.head_dim][1]

    @property
    def stages(self) -> int:
        return FWD_TILES[self.head_dim][2]

    @property
    def overlap(self) -> bool:
        return FWD_TILES[self.head_dim][3]

    @property
    def threads(self) -> int:
        return 128 * (1 + self.block_m // 64)

    @property
    def smem_bytes(self) -> int:
        """Dynamic shared memory: Q, the K/V ring, the mbarriers and 1 KB of alignment slack."""
        tiles = 2 * self.head_dim * (self.block_m + 2 * self.stages * self.block_n)
        barriers = 8 * (1 + 4 * self.stages)
        return tiles + barriers + 1024

    def spec(self) -> KernelSpec:
        return KernelSpec(
            source="attention/fwd_kernel.cu",
            name="fa3lite_fwd",
            defines=(
                ("FA3LITE_HEAD_DIM", str(self.head_dim)),
                ("FA3LITE_DTYPE_BF16", "1" if self.dtype == "bf16" else "0"),
                ("FA3LITE_CAUSAL", "1" if self.causal else "0"),
                ("FA3LITE_BLOCK_M", str(self.block_m)),
                ("FA3LITE_BLOCK_N", str(self.block_n)),
                ("FA3LITE_STAGES", str(self.stages)),
                ("FA3LITE_OVERLAP", "1" if self.overlap else "0"),
            ) + FWD_PARAMS.layout_defines(),
            debug=self.debug,
        )


def all_fwd_variants() -> list[FwdVariant]:
    return [FwdVariant(d, t, c) for d in HEAD_DIMS for t in DTYPES for c in (False, True)]
