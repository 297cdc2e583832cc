"""Kernel variants as values: a frozen key per compiled kernel, the tile table, the param layouts."""
from __future__ import annotations

import dataclasses
import typing

from .runtime.compile import KernelSpec
from .runtime.params import ParamStruct

HEAD_DIMS = (64, 96, 128, 192, 256)


# The kernel each head dim runs: 96 and 192 run padded to 128 and 256 (cuda_src/attention/tile_io.cuh;
# 192 would fit 64-column blocks, but the backward's wide layout splits columns per warpgroup in
# whole blocks, which 3 blocks do not allow).
KERNEL_HEAD_DIMS = {64: 64, 96: 128, 128: 128, 192: 256, 256: 256}


def kernel_head_dim(head_dim: int) -> int:
    """The head dim of the kernel that serves ``head_dim`` (KERNEL_HEAD_DIMS)."""
    return KERNEL_HEAD_DIMS[head_dim]


# (Q/K head dim, V head dim) pairs the kernels take: equal ones, and DeepSeek's 192 / 128, which runs
# the 256 kernel with V and O padded from 128 (tile_io.cuh).
HEAD_DIM_PAIRS = tuple((d, d) for d in HEAD_DIMS) + ((192, 128),)


def value_head_dim(head_dim: int, head_dim_v: int | None) -> int:
    """V's head dim of a variant (None: head_dim), checked against HEAD_DIM_PAIRS."""
    head_dim_v = head_dim if head_dim_v is None else head_dim_v
    if (head_dim, head_dim_v) not in HEAD_DIM_PAIRS:
        raise ValueError(f"(head_dim, head_dim_v) must be one of {HEAD_DIM_PAIRS}, got {(head_dim, head_dim_v)}")
    return head_dim_v
SMEM_LIMIT = 227 * 1024   # dynamic shared memory one Hopper CTA may use
DTYPES = ("bf16", "fp16")

class FwdTile(typing.NamedTuple):
    """One forward tile configuration."""

    block_m: int      # query rows per CTA: 64 per consumer warpgroup (2 or 3 warpgroups)
    block_n: int      # key rows per K/V stage
    stages: int       # depth of the K/V ring
    overlap: bool     # softmax of one key block under the P.V GEMM of the previous (intra-warpgroup)
    pingpong: bool    # consumer warpgroups take turns issuing GEMMs (cuda_src/attention/pingpong.cuh)
    persistent: bool = False   # one CTA per SM striding over the tiles (cuda_src/attention/scheduler.cuh)


# Forward tiles per (head dim, causal): ((min_seqlen_k, tile), ...), the last entry whose min_seqlen_k
# <= seqlen_k applies. Chosen with tools/fwd_tune.py --interleave on an H100 (candidates and cuDNN
# timed in alternation; benchmarks/RESULTS.md sections 16 and 23), re-swept once each warpgroup's
# exp2s ran under its own P.V GEMM (section 23):
# - d=64 runs three consumer warpgroups (192 query rows at 160 registers, FA3's shape for small heads:
#   more warps to hide exp2 latency), without pingpong since the intra-warpgroup overlap works
#   (+2..7% at 4k-8k, even elsewhere); causal below 2k keys takes 128-row tiles (+10% at 1k: fewer
#   rows past the diagonal) with the serial schedule: a tile there has 4.5 key blocks on average, too
#   few for the overlap's extra first and last steps to pay (+3% at 1k, +1.4% at 1.5k, 2 sweeps with
#   the bench's soak: section 33; cuDNN's kernel for this shape also waits for each S in full).
# - d=128: 128 x 128 everywhere but full masks from 8k keys, where one CTA per tile beats the
#   persistent grid (+3..4% at 16k); wider key blocks no longer pay.
# - d=256: persistent 128 x 80, but 64-key blocks for causal masks below 2k keys (+3..4% at 1k; even
#   with kDirectO, RESULTS section 49). One CTA per tile had been 2% faster for full masks from 16k
#   keys while O went out through sQ; with O stored from registers (kDirectO) persistent is 0.5-1.1%
#   ahead at 4k-16k.
FWD_TILES = {
    (64, False): ((0, FwdTile(192, 128, 2, True, False, persistent=True)),),
    (64, True): ((0, FwdTile(128, 128, 2, False, False, persistent=True)),
                 (2048, FwdTile(192, 128, 2, True, False, persistent=True))),
    (128, False): ((0, FwdTile(128, 128, 2, True, True, persistent=True)), (8192, FwdTile(128, 128, 2, True, True))),
    (128, True): ((0, FwdTile(128, 128, 2, True, True, persistent=True)),),
    (256, False): ((0, FwdTile(128, 80, 2, True, True, persistent=True)),),
    (256, True): ((0, FwdTile(128, 64, 2, True, True, persistent=True)),
                  (2048, FwdTile(128, 80, 2, True, True, persistent=True))),
}


# Split-KV kernels run decode shapes (few query rows against long keys; fa3lite/hopper/splits.py):
# one consumer warpgroup of 64 query rows (a 128-row tile would spend half its GEMMs on rows past
# the sequence's end) and, where shared memory has room, a third K/V stage to keep more bytes in
# flight: the work is reading K/V. The key block is the dense full-mask short-sequence tile's.
SPLIT_STAGES = {64: 3, 128: 3, 256: 2}
SPLIT_BLOCK_M = 64   # query rows of a split-KV tile: its one consumer warpgroup


def split_tile(head_dim: int) -> FwdTile:
    """The tile of a split-KV (decode) kernel for a head dim, either mask (SPLIT_STAGES)."""
    dense = fwd_tile(head_dim, False)
    return FwdTile(SPLIT_BLOCK_M, dense.block_n, SPLIT_STAGES[kernel_head_dim(head_dim)], overlap=True, pingpong=False)


class GroupedRows(typing.NamedTuple):
    """How the split kernel reads a decode step's queries q (B, Sq, Hq, D) in place as its packed rows
    (fa3lite/hopper/varlen.py forward_varlen_plan's ``grouped``; fa3lite.kvcache.step_rows makes it):
    row r of K/V head h is query head h * group_rows + r % group_rows at position r // group_rows
    (b * Sq + s), so the rows come in groups of group_rows, one per position (params.cuh row_group)."""

    group_rows: int                  # query heads per K/V head (the pack group)
    strides: tuple[int, int, int]    # q's elements between positions, adjacent query heads, K/V heads
    box_groups: int                  # positions per Q box: block_m // group_rows, or Sq where that does not divide


def split_box_groups(seqlen_q: int, group: int) -> int:
    """Positions per Q box of the split kernel reading a decode step in place (GroupedRows.box_groups): a
    tile of SPLIT_BLOCK_M rows holds whole groups, SPLIT_BLOCK_M // group positions where group divides
    it, else the step's Sq positions where they fit one tile (each sequence is then one tile); 0: neither."""
    if SPLIT_BLOCK_M % group == 0:
        return SPLIT_BLOCK_M // group
    return seqlen_q if seqlen_q * group <= SPLIT_BLOCK_M else 0


# Softcap's tanh does not fit the 160 registers of d=64's three consumer warpgroups (ptxas spills):
# softcapped d=64 runs two, with d=128's short-sequence tile. Nor does it fit 192-key blocks in 240
# registers while the exp2s run under the P.V GEMM (S, P and O live at once): softcap caps key blocks.
SOFTCAP_TILES = {64: FwdTile(128, 128, 2, True, True, persistent=True)}
SOFTCAP_MAX_BLOCK_N = 160


def fwd_tile(head_dim: int, causal: bool, seqlen_k: int = 0, softcap: bool = False) -> FwdTile:
    """The forward tile for a head dim, mask, key length and softcap (FWD_TILES, SOFTCAP_TILES,
    SOFTCAP_MAX_BLOCK_N; a padded head dim takes its kernel's)."""
    head_dim = kernel_head_dim(head_dim)
    if softcap and head_dim in SOFTCAP_TILES:
        return SOFTCAP_TILES[head_dim]
    tile = None
    for min_seqlen_k, t in FWD_TILES[(head_dim, bool(causal))]:
        if seqlen_k >= min_seqlen_k:
            tile = t
    if softcap and tile.block_n > SOFTCAP_MAX_BLOCK_N:
        tile = tile._replace(block_n=SOFTCAP_MAX_BLOCK_N)
    return tile


def varlen_tile(head_dim: int, causal: bool, max_seqlen_k: int = 0, softcap: bool = False) -> FwdTile:
    """The tile of a dense varlen kernel: fixed lengths' tile for the batch's longest key range, on a
    persistent grid whatever the length (its CTAs claim only real tiles: scheduler.cuh varlen_tile)."""
    return fwd_tile(head_dim, causal, max_seqlen_k, softcap)._replace(persistent=True)


FWD_PARAMS = ParamStruct("fa3lite::attn::FwdParams", (
    ("q", "tma"), ("k", "tma"), ("v", "tma"), ("o", "tma"),
    ("lse", "ptr"), ("tile_sched", "ptr"), ("sink", "ptr"), ("o_base", "ptr"),
    ("cu_seqlens_q", "ptr"), ("cu_seqlens_k", "ptr"), ("seqused_q", "ptr"), ("seqused_k", "ptr"),
    ("q_base", "ptr"), ("k_base", "ptr"), ("v_base", "ptr"), ("seq_maps", "ptr"),
    ("o_accum", "ptr"), ("lse_accum", "ptr"), ("page_table", "ptr"),
    ("q_row_bytes", "i64"), ("k_row_bytes", "i64"), ("v_row_bytes", "i64"),
    ("o_row_bytes", "i64"), ("o_head_bytes", "i64"), ("o_member_bytes", "i64"),
    ("lse_head_stride", "i64"), ("lse_row_stride", "i64"), ("lse_member_stride", "i64"),
    ("seqlen_q", "i32"), ("seqlen_k", "i32"), ("num_heads_q", "i32"), ("head_group", "i32"),
    ("page_size", "i32"), ("pages_per_seq", "i32"), ("page_rows", "i32"),
    ("num_m_blocks", "i32"), ("num_tiles", "i32"), ("num_splits", "i32"), ("pack_group", "i32"),
    ("lpt_heads", "i32"), ("row_group", "i32"), ("q_tile_bytes", "i32"),
    ("causal_offset", "i32"), ("local_offset", "i32"),
    ("scale_log2", "f32"), ("softcap_scale", "f32"),
))


@dataclasses.dataclass(frozen=True)
class FwdVariant:
    """One forward kernel: what the host chooses per call; everything else follows from it."""

    head_dim: int
    dtype: str          # "bf16" | "fp16"
    causal: bool        # the banded mask (causal, or any sliding window): config.cuh kIsCausal
    debug: bool = False
    tile: FwdTile | None = None   # None: the tile FWD_TILES gives short sequences
    softcap: bool = False         # scores through softcap * tanh(s / softcap): config.cuh kSoftcap
    varlen: bool = False          # packed variable-length sequences: kVarlen (kVarlenTiles when persistent)
    head_dim_v: int | None = None # V's and O's head dim (None: head_dim): kHeadDimVReal
    sink: bool = False            # learnable sinks in the softmax denominator: kSink
    split: bool = False           # split-KV (varlen, decode tile): kSplit; the tile is split_tile's
    paged: bool = False           # K/V read from a page pool in place (split only): kPaged

    def __post_init__(self):
        if self.head_dim not in HEAD_DIMS:
            raise ValueError(f"head_dim must be one of {HEAD_DIMS}, got {self.head_dim}")
        object.__setattr__(self, "head_dim_v", value_head_dim(self.head_dim, self.head_dim_v))
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {self.dtype!r}")
        if self.split and not self.varlen:
            raise ValueError("split-KV kernels run on the varlen layout (varlen=True)")
        if self.paged and not self.split:
            raise ValueError("paged K/V runs in the split-KV kernel (split=True)")
        if self.tile is None:
            object.__setattr__(self, "tile", split_tile(self.head_dim) if self.split
                               else varlen_tile(self.head_dim, self.causal, softcap=self.softcap) if self.varlen
                               else fwd_tile(self.head_dim, self.causal, softcap=self.softcap))
        if self.split and self.tile.persistent:   # a split CTA writes partial results of one tile
            object.__setattr__(self, "tile", self.tile._replace(persistent=False))

    @property
    def kernel_dim(self) -> int:
        """The kernel's head dim (kernel_head_dim): the tiles, registers and shared memory follow it."""
        return kernel_head_dim(self.head_dim)

    @property
    def block_m(self) -> int:
        return self.tile.block_m

    @property
    def block_n(self) -> int:
        return self.tile.block_n

    @property
    def stages(self) -> int:
        return self.tile.stages

    @property
    def overlap(self) -> bool:
        return self.tile.overlap

    @property
    def threads(self) -> int:
        return 128 * (1 + self.block_m // 64)

    @property
    def dynamic_tiles(self) -> bool:
        """Mirror of kDynamicTiles and kVarlenTiles (config.cuh): a persistent causal kernel claims its
        tiles from a counter (when launched on fewer CTAs than tiles), a persistent varlen one always."""
        return self.tile.persistent and (self.causal or self.varlen)

    @property
    def separate_o(self) -> bool:
        """Whether O gets its own staging buffer (fwd_smem.cuh): where shared memory has room."""
        return self._smem(True, 1) <= SMEM_LIMIT

    @property
    def direct_o(self) -> bool:
        """Mirror of kDirectO (config.cuh): a persistent kernel without room for sO (not the split
        kernel) stores O from registers, so nothing stages O in sQ."""
        return not self.separate_o and self.tile.persistent and not self.split

    @property
    def q_stages(self) -> int:
        """Q buffers (config.cuh kQStages): two for a persistent fixed-length kernel with its own O
        buffer where shared memory has room for both, else one."""
        two = self.tile.persistent and not self.varlen and self.separate_o and self._smem(True, 2) <= SMEM_LIMIT
        return 2 if two else 1

    @property
    def smem_bytes(self) -> int:
        """Mirror of FwdSmem::kDynamicBytes (the kernel static_asserts the two agree): the Q buffers,
        the K/V ring, O's buffer where it fits, the mbarriers and 1 KB of alignment slack."""
        return self._smem(self.separate_o, self.q_stages)

    def _smem(self, separate_o: bool, q_stages: int) -> int:
        rows = self.block_m * (q_stages + (1 if separate_o else 0)) + 2 * self.stages * self.block_n
        barriers = 8 * (2 * q_stages + 4 * self.stages)
        return 2 * self.kernel_dim * rows + barriers + 1024

    def spec(self) -> KernelSpec:
        return KernelSpec(
            source="attention/fwd_kernel.cu",
            name="fa3lite_fwd",
            defines=(
                ("FA3LITE_HEAD_DIM", str(self.kernel_dim)),
                ("FA3LITE_HEAD_DIM_REAL", str(self.head_dim)),
                ("FA3LITE_HEAD_DIM_V_REAL", str(self.head_dim_v)),
                ("FA3LITE_DTYPE_BF16", "1" if self.dtype == "bf16" else "0"),
                ("FA3LITE_CAUSAL", "1" if self.causal else "0"),
                ("FA3LITE_SOFTCAP", "1" if self.softcap else "0"),
                ("FA3LITE_SINK", "1" if self.sink else "0"),
                ("FA3LITE_VARLEN", "1" if self.varlen else "0"),
                ("FA3LITE_SPLIT", "1" if self.split else "0"),
                ("FA3LITE_PAGED", "1" if self.paged else "0"),
                ("FA3LITE_BLOCK_M", str(self.block_m)),
                ("FA3LITE_BLOCK_N", str(self.block_n)),
                ("FA3LITE_STAGES", str(self.stages)),
                ("FA3LITE_OVERLAP", "1" if self.overlap else "0"),
                ("FA3LITE_PINGPONG", "1" if self.tile.pingpong else "0"),
                ("FA3LITE_SEPARATE_O", "1" if self.separate_o else "0"),
                ("FA3LITE_Q_STAGES", str(self.q_stages)),
                ("FA3LITE_PERSISTENT", "1" if self.tile.persistent else "0"),
                ("FA3LITE_SMEM_BYTES", str(self.smem_bytes)),
            ) + FWD_PARAMS.layout_defines(),
            debug=self.debug,
        )


def all_fwd_variants() -> list[FwdVariant]:
    """Every forward kernel the host can pick (each tile of FWD_TILES, both dtypes, with and without
    softcap; varlen likewise with varlen_tile's tiles; each with and without a sink)."""
    def tiles(d, c, sc, varlen):
        pick = varlen_tile if varlen else fwd_tile
        return sorted({pick(d, c, min_seqlen_k, sc) for min_seqlen_k, _ in FWD_TILES[(kernel_head_dim(d), c)]})

    fixed = [FwdVariant(d, t, c, tile=tile, softcap=sc) for d in HEAD_DIMS for c in (False, True)
             for sc in (False, True) for t in DTYPES for tile in tiles(d, c, sc, False)]
    varlen = [FwdVariant(d, t, c, tile=tile, softcap=sc, varlen=True) for d in HEAD_DIMS for c in (False, True)
              for sc in (False, True) for t in DTYPES for tile in tiles(d, c, sc, True)]
    # unequal head dims (HEAD_DIM_PAIRS), fixed and varlen, without softcap
    unequal = [FwdVariant(d, t, c, tile=tile, head_dim_v=dv, varlen=vl) for d, dv in HEAD_DIM_PAIRS if d != dv
               for t in DTYPES for c in (False, True) for vl in (False, True) for tile in tiles(d, c, False, vl)]
    # split-KV (decode) kernels: every varlen variant with the split tile (one per tile-less variant)
    split = list(dict.fromkeys(
        FwdVariant(v.head_dim, v.dtype, v.causal, softcap=v.softcap, varlen=True, head_dim_v=v.head_dim_v, split=True)
        for v in varlen + unequal if v.varlen))
    without = fixed + varlen + unequal + split
    # paged K/V (flash_attn_with_kvcache, which takes no sink): every split variant without a sink
    paged = [dataclasses.replace(v, paged=True) for v in split]
    return without + [dataclasses.replace(v, sink=True) for v in without] + paged   # with a sink too
