"""Host side of the Hopper backward kernels: variant choice, buffers, tensor maps, params, launches.

    backward(dout, q, k, v, out, lse, softmax_scale, causal, causal_offset, deterministic=False,
             need_dq=True, need_dkv=True, fwd_plan=None, local_offset=None, softcap=0.0, sink=None)
        -> (dq or None, dk or None, dv or None), and dsink after them when a sink is given

Shapes (flash_attn layout): q (B, Sq, Hq, D); k (B, Sk, Hk, D); v (B, Sk, Hk, Dv); out, dout
(B, Sq, Hq, Dv); any strides with the last dim contiguous (other layouts are copied); lse (B, Hq, Sq)
f32, natural log (-inf for fully masked rows); Dv == D or (D, Dv) = (192, 128). Returns dq, dk, dv
shaped like q, k, v, contiguous, in q's dtype; dq is None
without need_dq, dk and dv None without need_dkv (at least one of the two must be asked for).
Mask, softcap and sink as in the forward (fa3lite/hopper/fwd.py); sink (Hq,) float32 contiguous, and
then dsink (Hq,) float32 = -sum over batch and rows of exp(sink - lse) * rowsum(dO * O) (torch ops on
the preprocess's lse_log2 and dpsum, after the launches on the same stream).

Up to three launches on torch's current stream:
  1. preprocess (bwd_preprocess.cu): dpsum = rowsum(dO * O) and lse_log2, both (B, Hq, Sq padded to
     whole query blocks) f32, and zeroes the turn counters or claim words and, where the main kernel
     does not store first tiles (stores_first), the dQ accumulator; varlen, also the main kernel's
     tensor maps of each sequence. Always (both gradients need dpsum and lse_log2).
  2. main kernel (bwd_kernel.cu): one CTA per (key block, query head, batch) -- 128 key rows, or 64
     for D = 256 -- writes dK/dV and adds dQ contributions into an f32 accumulator
     (B, Hq, m_blocks, block_m * D) in fragment order (cuda_src/attention/bwd_dq.cuh); each query
     block's first contribution is stored instead (claims, or the first turn; wide: added into a part
     the turn keeper zeroed) where stores_first says so: deterministic calls, and narrow ones but
     D = 64 with softcap (two partial tiles per block).
     Causal CTAs are launched longest first within groups of heads sized to L2 (lpt_heads,
     bwd_scheduler.cuh); varlen too, by key block index, with groups sized from the longest sequence.
  3. postprocess (bwd_postprocess.cu): dq = softmax_scale * accumulator in (B, Sq, Hq, D) (zeros for a
     block no key block visited).
need_dq / need_dkv pick a compiled variant (BwdVariant) that computes only those gradients: without
dq there is no accumulator, no turn counters, no postprocess and no dQ work in the main kernel;
without dk/dv no dk/dv buffers (and no GQA f32 buffers or sum) and no dV/dK work in the kernel.
With GQA/MQA one CTA per (key block, K/V head) walks the group's query heads and sums their dK/dV in
registers (cta_heads; bwd_scheduler.cuh; a kernel variant of its own, BwdVariant.walk_heads), where
that leaves at least GROUPED_MIN_CTAS_PER_SM CTAs an SM; otherwise each CTA keeps one query head and
the main kernel writes dK/dV per query head in f32 (B, Sk, Hq, D), summed here over the query heads
of each K/V head (a fixed-order torch reduction, so deterministic too). Varlen (hopper/varlen.py)
chooses the same way.
deterministic=True adds each query block's dQ tiles in a fixed order of key blocks (a turn counter
per query block; the order per mask in cuda_src/attention/bwd_scheduler.cuh, turn_order here), so
repeated runs give bitwise-equal dq (it has no effect without need_dq); dk/dv are always
deterministic (each CTA owns its key rows).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import os

import torch

from .. import checks
from ..runtime import cdriver, launch, tma
from ..runtime.compile import KernelSpec
from ..runtime.driver import on_device
from ..runtime.params import ParamStruct
from ..variants import HEAD_DIM_PAIRS, kernel_head_dim, value_head_dim
from .common import (DTYPE_NAMES, LOG2E, MAX_GRID_X, PLAN_LIMIT, PTR, band, debug_build, device_index,
                     lpt_group, score_scales, sm_count)

HEAD_DIMS = (64, 96, 128, 192, 256)   # 96 and 192 run the 128 and 256 kernels padded (variants.kernel_head_dim)
DTYPES = ("bf16", "fp16")
THREADS = 384           # producer + 2 consumer warpgroups
_AUX_THREADS = 256      # block size of the pre/postprocess kernels
SCHED_WORDS = 64          # the work buffer's tail: the main kernel's tile counter, padded to 256 bytes
SHORT_RING_M_BLOCKS = 8   # banded masks over at most this many query blocks: two Q/dO stages (short_ring)

BWD_PARAMS = ParamStruct("fa3lite::attn::bwd::BwdParams", (
    ("q", "tma"), ("k", "tma"), ("v", "tma"), ("dout", "tma"),
    ("lse_log2", "ptr"), ("dpsum", "ptr"), ("dq_accum", "ptr"), ("dq_sem", "ptr"),
    ("dk", "ptr"), ("dv", "ptr"), ("tile_counter", "ptr"),
    ("cu_seqlens_q", "ptr"), ("cu_seqlens_k", "ptr"), ("seqused_q", "ptr"), ("seqused_k", "ptr"),
    ("seq_maps", "ptr"),
    ("seqlen_q", "i32"), ("seqlen_k", "i32"), ("num_heads_q", "i32"), ("head_group", "i32"), ("cta_heads", "i32"),
    ("num_m_blocks", "i32"), ("num_n_blocks", "i32"), ("causal_offset", "i32"), ("local_offset", "i32"),
    ("deterministic", "i32"), ("lpt_heads", "i32"), ("dq_claims", "i32"), ("rotated_walk", "i32"),
    ("num_tiles", "i32"), ("scale_log2", "f32"), ("softmax_scale", "f32"),
    ("softcap_scale", "f32"),
))

PRE_PARAMS = ParamStruct("fa3lite::attn::bwd::PreParams", (
    ("dout", "ptr"), ("out", "ptr"), ("lse", "ptr"), ("lse_log2", "ptr"), ("dpsum", "ptr"),
    ("dq_accum", "ptr"), ("dq_sem", "ptr"), ("tile_counter", "ptr"), ("cu_seqlens_q", "ptr"), ("seqused_q", "ptr"),
    ("do_stride_b", "i64"), ("do_stride_s", "i64"), ("do_stride_h", "i64"),
    ("o_stride_b", "i64"), ("o_stride_s", "i64"), ("o_stride_h", "i64"),
    ("lse_stride_b", "i64"), ("lse_stride_h", "i64"), ("lse_stride_s", "i64"),
    ("seqlen_q", "i32"), ("rows_pad", "i32"), ("num_heads", "i32"), ("row_blocks", "i32"), ("block_m", "i32"),
    ("sems_per_block", "i32"),
    ("dq", "ptr"), ("dk", "ptr"), ("dv", "ptr"), ("cu_seqlens_k", "ptr"), ("seqused_k", "ptr"),
    ("dq_row_bytes", "i64"), ("dk_row_bytes", "i64"), ("dv_row_bytes", "i64"),
    ("total_q", "i32"), ("total_k", "i32"), ("num_seqs", "i32"),
    ("seq_maps", "ptr"), ("q_base", "ptr"), ("k_base", "ptr"), ("v_base", "ptr"),
    ("q_row_bytes", "i64"), ("k_row_bytes", "i64"), ("v_row_bytes", "i64"),
    ("q_map", "tma"), ("k_map", "tma"), ("v_map", "tma"), ("dout_map", "tma"),
))
# PreParams' varlen fields, zero with fixed lengths (no rows to fill: bwd_preprocess.cu zero_unowned_rows;
# no sequence maps to build: write_seq_maps)
PRE_FIXED_LENGTHS = dict(dq=0, dk=0, dv=0, cu_seqlens_k=0, seqused_k=0, dq_row_bytes=0, dk_row_bytes=0,
                         dv_row_bytes=0, total_q=0, total_k=0, num_seqs=0, seq_maps=0, q_base=0, k_base=0,
                         v_base=0, q_row_bytes=0, k_row_bytes=0, v_row_bytes=0, q_map=tma.BLANK_MAP,
                         k_map=tma.BLANK_MAP, v_map=tma.BLANK_MAP, dout_map=tma.BLANK_MAP)

POST_PARAMS = ParamStruct("fa3lite::attn::bwd::PostParams", (
    ("dq_accum", "ptr"), ("dq", "ptr"), ("dq_visits", "ptr"), ("cu_seqlens_q", "ptr"), ("seqused_q", "ptr"),
    ("seqlen_q", "i32"), ("num_heads", "i32"), ("num_m_blocks", "i32"), ("scale", "f32"),
))


@dataclasses.dataclass(frozen=True)
class BwdVariant:
    """One main backward kernel. dkv_f32: dK/dV per query head in f32 (GQA/MQA). need_dq / need_dkv:
    the gradients it computes (bwd_config.cuh kNeedDq / kNeedDkv). causal: the banded mask (causal or
    a window, hopper.common.band); softcap: scores through softcap * tanh(s / softcap) (kSoftcap)."""

    head_dim: int
    dtype: str          # "bf16" | "fp16"
    causal: bool
    dkv_f32: bool = False
    debug: bool = False
    need_dq: bool = True
    need_dkv: bool = True
    softcap: bool = False
    varlen: bool = False
    head_dim_v: int | None = None   # V's head dim (None: head_dim), a pair of variants.HEAD_DIM_PAIRS
    short_ring: bool = False        # two Q/dO stages where three would apply (stages); False where they do not
    walk_heads: bool = False        # a CTA walks cta_heads query heads, GQA's group (head_walk; walks_heads)

    def __post_init__(self):
        if self.head_dim not in HEAD_DIMS:
            raise ValueError(f"backward head_dim must be one of {HEAD_DIMS}, got {self.head_dim}")
        object.__setattr__(self, "head_dim_v", value_head_dim(self.head_dim, self.head_dim_v))
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {self.dtype!r}")
        if not (self.need_dq or self.need_dkv):
            raise ValueError("a backward variant must compute dq or dk/dv (need_dq or need_dkv)")
        if self.dkv_f32 and not self.need_dkv:
            raise ValueError("dkv_f32 (f32 dk/dv per query head) needs need_dkv")
        if self.walk_heads and not self.groupable_heads:
            raise ValueError(f"walk_heads needs a groupable variant (16-bit dk/dv; not D = 64 with softcap "
                             f"nor padded in 256), got {self}")
        object.__setattr__(self, "short_ring", self.short_ring and self._deep_ring_fits)

    @property
    def walks_heads(self) -> bool:
        """Whether the kernel compiles the head walk (bwd_config.cuh kWalkHeads): walk_heads, and every
        unpadded D = 256 variant that may walk, MHA too (one head): its MHA backward ran 2-3% slower
        with the compile-time count of 1 (RESULTS section 39, round1/round2)."""
        return self.walk_heads or (self.groupable_heads and self.kernel_dim == 256)

    @property
    def persistent(self) -> bool:
        """Whether the main kernel's CTAs walk many tiles (bwd_config.cuh kPersistent; host: main_ctas):
        the D = 64 kernels. Their tiles are short, so a CTA's start is a visible part of one, and
        walking measured 0.5-8% shorter main kernels (d = 64 causal 16k 5229 -> 4794 us). The wider
        kernels gained nothing at long sequences and 1-3% at 1k-2k full masks only (benchmarks/
        RESULTS.md sections 53, 54). Varlen with f32 dK/dV or causal softcap stays one tile per CTA:
        there the dQ writers' tile walk spilled 20-48 bytes in their 24 registers, and 32 (consumers
        at 232) spilled in the consumers instead."""
        if self.kernel_dim != 64:
            return False
        return not (self.varlen and (self.dkv_f32 or (self.causal and self.softcap)))

    @property
    def kernel_dim(self) -> int:
        """The kernel's head dim (variants.kernel_head_dim)."""
        return kernel_head_dim(self.head_dim)

    @property
    def rotatable_turns(self) -> bool:
        """Mirror of kRotatableTurns (bwd_config.cuh): deterministic mode may rotate the query blocks
        (a full mask; not D = 64 with softcap, whose registers lack room for the wrap)."""
        return not self.causal and not (self.softcap and self.kernel_dim == 64)

    @property
    def groupable_heads(self) -> bool:
        """Whether the variant may take walk_heads (bwd_config.cuh kWalkHeads' static_assert):
        16-bit dK/dV, not D = 64 with softcap and not padded in 256 (D = 192; its walk spilled)."""
        padded_256 = self.kernel_dim == 256 and not self.head_dim == self.head_dim_v == 256
        return (self.need_dkv and not self.dkv_f32 and not (self.kernel_dim == 64 and self.softcap)
                and not padded_256)

    @property
    def wide(self) -> bool:
        """D = 256 layout (bwd_config.cuh kWide): 64 key rows per CTA, P^T/dS^T through smem."""
        return self.kernel_dim > 128

    @property
    def block_n(self) -> int:
        """Key rows per CTA (kBlockN)."""
        return 64 if self.wide else 128

    @property
    def block_m(self) -> int:
        """Query rows per step of the main kernel (bwd_config.cuh kBlockM): 128 at D = 64 (S^T and
        dP^T of 128 queries fit beside dK/dV there, and each SS wgmma reads half the shared memory
        per FLOP), else 64. Softcap keeps 64: its tanh values spill at 128."""
        return 128 if self.kernel_dim == 64 and not self.softcap else 64

    @property
    def sems_per_block(self) -> int:
        """Deterministic turn counters per query block (bwd_config.cuh kSemsPerBlock): one per
        consumer warpgroup in the wide layout (each adds its own columns), else one."""
        return 2 if self.wide else 1

    @property
    def dq_regions(self) -> int:
        """dQ tiles in shared memory per query block (bwd_config.cuh kDqRegions): none in the wide
        layout or without dQ, one tile split by columns (D = 128) or rows (128-query steps), one
        partial tile per consumer warpgroup at D = 64 with 64-query steps."""
        if self.wide or not self.need_dq:
            return 0
        return 1 if self.kernel_dim >= 128 or self.block_m == 128 else 2

    @property
    def _deep_ring_fits(self) -> bool:
        return self.block_m == 128 and self.need_dq and not self.wide

    @property
    def stages(self) -> int:
        """Depth of the Q/dO ring (bwd_config.cuh kStages): three with 128-query steps and dQ (their
        one dS^T buffer leaves room), unless short_ring; else two."""
        return 3 if self._deep_ring_fits and not self.short_ring else 2

    @property
    def dq_buffers(self) -> int:
        """dQ tile buffers (bwd_config.cuh kDqBuffers), each with its own writer warp: two alternate
        query blocks, one with 128-query steps (a second 32 KB tile does not fit), none without."""
        return 0 if self.dq_regions == 0 else (1 if self.block_m == 128 else 2)

    @property
    def smem_bytes(self) -> int:
        """Mirror of BwdSmem::kDynamicBytes (the kernel static_asserts the two agree)."""
        d, n, m = self.kernel_dim, self.block_n, self.block_m
        all_keys = d >= 128 or m == 128                # a dQ tile sums over all keys (kDqAllKeys)
        stages = self.stages
        tiles = 2 * (n * d * 2) + 2 * stages * (m * d * 2)
        ds_via_smem = self.need_dq or self.wide       # narrow dK reads dS^T from registers
        ds_buffers = (2 if all_keys and stages == 2 else 1) if ds_via_smem else 0
        ds = ds_buffers * n * m * 2
        p = ds if self.wide and self.need_dkv else 0
        dq = self.dq_buffers * self.dq_regions * m * d * 4
        stats = 2 * stages * m * 4                     # lse_log2 and dPsum rows of each stage
        barriers = 8 * (6 + 3 * stages)              # kv_full, kv_empty, the ring's, sched_full/empty[2]
        sched = 8                                      # two tile indices
        return tiles + ds + p + dq + stats + barriers + sched + 1024

    def _common(self) -> tuple[tuple[str, str], ...]:
        return (("FA3LITE_HEAD_DIM", str(self.kernel_dim)), ("FA3LITE_HEAD_DIM_REAL", str(self.head_dim)),
                ("FA3LITE_HEAD_DIM_V_REAL", str(self.head_dim_v)),
                ("FA3LITE_DTYPE_BF16", "1" if self.dtype == "bf16" else "0"),
                ("FA3LITE_BWD_BLOCK_M", str(self.block_m)))

    def spec(self) -> KernelSpec:
        return KernelSpec(
            source="attention/bwd_kernel.cu",
            name="fa3lite_bwd",
            defines=self._common() + (
                ("FA3LITE_CAUSAL", "1" if self.causal else "0"),
                ("FA3LITE_SOFTCAP", "1" if self.softcap else "0"),
                ("FA3LITE_VARLEN", "1" if self.varlen else "0"),
                ("FA3LITE_BWD_PERSISTENT", "1" if self.persistent else "0"),
                ("FA3LITE_DKV_F32", "1" if self.dkv_f32 else "0"),
                ("FA3LITE_WALK_HEADS", "1" if self.walks_heads else "0"),
                ("FA3LITE_NEED_DQ", "1" if self.need_dq else "0"),
                ("FA3LITE_NEED_DKV", "1" if self.need_dkv else "0"),
                ("FA3LITE_BWD_STAGES", str(self.stages)),
                ("FA3LITE_SMEM_BYTES", str(self.smem_bytes)),
            ) + BWD_PARAMS.layout_defines(),
            debug=self.debug,
        )

    def preprocess_spec(self) -> KernelSpec:
        return KernelSpec("attention/bwd_preprocess.cu", "fa3lite_bwd_preprocess",
                          self._common() + PRE_PARAMS.layout_defines())

    def postprocess_spec(self) -> KernelSpec:
        return KernelSpec("attention/bwd_postprocess.cu", "fa3lite_bwd_postprocess",
                          self._common() + POST_PARAMS.layout_defines())


# The leading fields of each block, which a call fills in (launch.Prepared); the rest is per plan.
PRE_HEAD = PRE_PARAMS.head("dout", "out", "lse", "lse_log2", "dpsum", "dq_accum", "dq_sem", "tile_counter")
MAIN_HEAD = BWD_PARAMS.head("q", "k", "v", "dout", "lse_log2", "dpsum", "dq_accum", "dq_sem", "dk", "dv",
                            "tile_counter")
POST_HEAD = POST_PARAMS.head("dq_accum", "dq", "dq_visits")

NEEDS = ((True, True), (True, False), (False, True))   # (need_dq, need_dkv) of the buildable variants


def all_bwd_variants() -> list[BwdVariant]:
    """Every main kernel variant backward() and the varlen backward can build (the debug twins aside);
    varlen always computes every gradient."""
    fixed = [BwdVariant(d, t, c, f, need_dq=nq, need_dkv=nkv, softcap=sc) for d in HEAD_DIMS for t in DTYPES
             for c in (False, True) for nq, nkv in NEEDS for f in ((False, True) if nkv else (False,))
             for sc in (False, True)]
    varlen = [BwdVariant(d, t, c, f, softcap=sc, varlen=True) for d in HEAD_DIMS for t in DTYPES
              for c in (False, True) for f in (False, True) for sc in (False, True)]
    # unequal head dims (variants.HEAD_DIM_PAIRS), every gradient, fixed and varlen, without softcap
    unequal = [BwdVariant(d, t, c, f, head_dim_v=dv, varlen=vl) for d, dv in HEAD_DIM_PAIRS if d != dv
               for t in DTYPES for c in (False, True) for f in (False, True) for vl in (False, True)]
    # GQA's grouped twins (head_walk) of every variant that may take them
    grouped = [dataclasses.replace(v, walk_heads=True) for v in fixed + varlen + unequal
               if v.groupable_heads and not v.walks_heads]
    # banded masks over few query blocks take the two-stage ring where a variant has three
    short = [dataclasses.replace(v, short_ring=True) for v in fixed + varlen + grouped if v.causal and v.stages == 3]
    return fixed + varlen + unequal + grouped + short


def for_query_length(variant: BwdVariant, max_seqlen_q: int) -> BwdVariant:
    """The variant a call of at most ``max_seqlen_q`` queries runs: a banded mask whose key blocks see at
    most SHORT_RING_M_BLOCKS query blocks keeps two Q/dO stages (short_ring; D = 64 causal 1k: the third
    stage's dS^T hand-off cost 2.5%, while from 4k it gained 1-3%; benchmarks/RESULTS.md section 31)."""
    if variant.causal and -(-max_seqlen_q // variant.block_m) <= SHORT_RING_M_BLOCKS:
        return dataclasses.replace(variant, short_ring=True)
    return variant


def main_kernel_spec(head_dim: int, dtype: str, causal: bool, dkv_f32: bool = False, need_dq: bool = True,
                     need_dkv: bool = True, softcap: bool = False):
    """(KernelSpec, dynamic smem bytes, tile info) of the main backward kernel, for kernel_info."""
    v = BwdVariant(head_dim, dtype, causal, dkv_f32, need_dq=need_dq, need_dkv=need_dkv, softcap=softcap)
    return v.spec(), v.smem_bytes, {"block_m": v.block_m, "block_n": v.block_n, "stages": v.stages,
                                    "threads": THREADS}


@functools.cache
def _kernels(variant: BwdVariant, device_index: int):
    """(preprocess, main, postprocess) loaded on a device; cached so a call hashes a small key."""
    return (launch.load(variant.preprocess_spec(), device_index, 0),
            launch.load(variant.spec(), device_index, variant.smem_bytes),
            launch.load(variant.postprocess_spec(), device_index, 0))


def launch_packed(kernel, grid, threads, dev, params, addresses, stream, maps=()):
    """One launch inside the caller's on_device block: the packed parameters, then the ``addresses``
    ((offset, pointer) pairs) and ``maps`` (((offset, MapMaker), tensor) pairs) patched in."""
    block = launch.staging_view(len(params))
    block[:len(params)] = params
    for at, ptr in addresses:
        PTR.pack_into(block, at, ptr)
    for (at, maker), t in maps:
        block[at:at + 128] = maker(t.data_ptr())
    launch.launch_current(kernel, grid, threads, dev, stream)


def sink_grad(work, start: int, stats_shape, sink):
    """dsink (Hq,) = -sum over batch and rows of exp(sink - lse) * dpsum, from the preprocess's lse_log2
    and dpsum, stats_shape (B, Hq, rows_pad) each, at ``start`` of the work buffer (padded rows have
    lse_log2 +inf and dpsum 0: they add nothing). Torch ops queued after the launches."""
    rows = stats_shape[0] * stats_shape[1] * stats_shape[2]
    lse2 = work[start:start + rows].view(stats_shape)
    dps = work[start + rows:start + 2 * rows].view(stats_shape)
    return -(torch.exp2(sink.view(1, -1, 1) * LOG2E - lse2) * dps).sum(dim=(0, 2))


def _zeros(t: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(t, memory_format=torch.contiguous_format)


def post_grid(query_blocks: int) -> tuple[int, int, int]:
    """The postprocess's grid: one CTA per query block of the dQ accumulator (bwd_postprocess.cu)."""
    return (query_blocks, 1, 1)


def main_ctas(deterministic: bool, tiles: int, device: int, persistent: bool) -> int:
    """CTAs of the main kernel for ``tiles`` tiles (key block, head pair, batch). A ``persistent``
    variant (BwdVariant.persistent) without deterministic turns runs at most one per SM, each taking
    tile blockIdx.x, then gridDim.x plus a ticket from the tile counter (bwd_scheduler.cuh
    for_each_tile): a CTA then loads its next tile's first Q/dO under the tile before and sets up once.
    Otherwise one CTA per tile: the other variants take exactly one, and the deterministic turns may
    wait for a tile launched later, which is only safe while every tile has a CTA of its own
    (turn_order). FA3LITE_BWD_MAX_CTAS (a positive integer, read when a call signature's plan is built)
    caps the persistent grid further, so that tests can make a few CTAs walk many tiles at small
    shapes."""
    if deterministic or not persistent:
        return tiles
    cap = sm_count(device)
    env = os.environ.get("FA3LITE_BWD_MAX_CTAS", "")
    if env:
        if not env.isdigit() or int(env) < 1:
            raise ValueError(f"FA3LITE_BWD_MAX_CTAS must be a positive integer, got {env!r}")
        cap = min(cap, int(env))
    return min(tiles, cap)


ROTATED_TURNS = 2   # BwdParams.deterministic for the rotated full-mask order (bwd_scheduler.cuh kRotatedTurns)


def turn_order(deterministic: bool, rotatable: bool, n_blocks: int, device: int) -> int:
    """BwdParams.deterministic: 0 (off), 1 (key-block order: ascending, descending with a band), or
    ROTATED_TURNS for a variant that can rotate (BwdVariant.rotatable_turns: a full mask) when a
    sequence's n_blocks key blocks fit on half the SMs: each then walks the query blocks from its own
    on, so none waits for its first turn, but a block may wait for blocks launched after it, which
    must be able to become resident (the margin leaves room for SMs that another stream's kernels or
    an MPS limit hold; bwd_scheduler.cuh)."""
    if not deterministic:
        return 0
    return ROTATED_TURNS if rotatable and 2 * n_blocks <= sm_count(device) else 1


def dq_claims(variant: BwdVariant, deterministic: bool) -> bool:
    """Whether a call adds dQ with claims (bwd_dq.cuh): each query block's first tile is stored, so the
    preprocess zeroes one claim word per block instead of the f32 accumulator (a third of its
    traffic). Narrow variants whose dQ tile sums over all keys (dq_regions 1); not deterministic,
    whose turns give the order (the first turn stores: stores_first). Not the wide layout, where
    both ways of claiming tried lost to the zeroing (bwd_dq.cuh, benchmarks/RESULTS.md section 35)."""
    return variant.dq_regions == 1 and not deterministic


def stores_first(variant: BwdVariant, deterministic: bool) -> bool:
    """Whether the main kernel stores each query block's first dQ tile (bwd_dq.cuh: claims, or the first
    of the deterministic turns, narrow or wide), so that the preprocess leaves the accumulator alone and
    the postprocess reads the claim words or turn counters to find blocks nobody visited."""
    return variant.need_dq and (deterministic or dq_claims(variant, deterministic))


def work_floats(accum: int, sems: int, rows: int) -> int:
    """Floats of the backward's work buffer, in order: the f32 dQ accumulator (``accum``), the dQ
    turn counters or claim words (``sems``, counter_words), lse_log2 and dpsum (``rows`` each), then
    the main kernel's tile counter (SCHED_WORDS, zeroed by the preprocess)."""
    return accum + sems + 2 * rows + SCHED_WORDS


def work_tail(base: int, accum: int, sems: int, rows: int) -> tuple[int, int, int, int]:
    """Addresses of the turn counters or claim words (0 where there are none), lse_log2, dpsum and the
    tile counter in the work buffer at ``base`` (work_floats)."""
    lse_log2 = base + 4 * (accum + sems)
    return (base + 4 * accum if sems else 0), lse_log2, lse_log2 + 4 * rows, lse_log2 + 8 * rows


def counter_words(variant: BwdVariant, deterministic: bool, query_blocks: int) -> int:
    """Turn counters or claim words (i32) for ``query_blocks`` query blocks (all (batch, head) pairs), 0
    where neither applies, padded so that what follows them in the work buffer stays 256-byte aligned."""
    if not (deterministic or dq_claims(variant, deterministic)):
        return 0
    return -(-query_blocks * variant.sems_per_block // 64) * 64


ROTATED_WALK_M_BLOCKS = 16   # rotated_walk: query blocks up to which the rotated walk pays


def rotated_walk(variant: BwdVariant, deterministic: bool, m_blocks: int) -> bool:
    """BwdParams.rotated_walk: without turns, 128-query steps (D = 64: one dQ buffer) walk a full mask's
    query blocks from their own on (bwd_scheduler.cuh) when there are at most ROTATED_WALK_M_BLOCKS of
    them. With claims, walking in step, every key block reached a query block at once and waited for
    its first store, and the one dQ buffer passed the wait on to the consumers: rotated, +4% at 1k
    (8 blocks); from 4k even, and at D = 128 (two buffers) -3% at 4k-16k, where the head's key blocks
    no longer share each Q/dO block in L2 as they read it (benchmarks/RESULTS.md section 34). Whichever
    gradients a call computes (the walk orders the dK/dV sums: a dK/dV-only call gives the bits of a
    full one)."""
    return (variant.rotatable_turns and variant.block_m == 128 and not deterministic
            and m_blocks <= ROTATED_WALK_M_BLOCKS)


def lpt_heads(q: torch.Tensor, v: torch.Tensor, heads: int) -> int:
    """Heads per group of the causal launch order (bwd_scheduler.cuh): a power of two whose Q, dO
    and f32 dQ rows take at most half of L2, so the group's key-block CTAs, which all read them, mostly
    hit in L2 while every head's longest block goes first. Grouped GQA CTAs (cta_heads) count as one
    head each too: they walk their heads one after another, and groups sized to all of a pair's heads
    (one pair at 4k) or to every pair were 1-13% and 3-73% slower at d=128 (RESULTS section 38)."""
    return lpt_pairs(q.shape[1], q.shape[3], v.shape[3], q.element_size(), heads, q.device)


def lpt_pairs(seqlen: int, d: int, dv: int, elem_bytes: int, pairs: int, device) -> int:
    """lpt_heads from sizes: ``pairs`` (query head, batch) slots of ``seqlen`` rows (varlen: the longest
    sequence's, an upper bound), Q and dO rows of d / dv elements and f32 dQ rows."""
    return lpt_group(seqlen * (d * elem_bytes + dv * elem_bytes + d * 4), pairs, device)


# GQA: one CTA sums its K/V head's whole group (bwd_scheduler.cuh) where that still leaves this many
# CTAs per SM; below it, fewer and G-times longer CTAs would leave SMs idle, and the CTAs keep one
# query head each with f32 dK/dV per query head, summed by torch.
GROUPED_MIN_CTAS_PER_SM = 2


def grouped_heads(ctas: int, device_index: int) -> bool:
    """Whether a GQA backward of ``ctas`` grouped CTAs (key blocks x K/V heads x batch) sums each
    group in one CTA."""
    return ctas >= GROUPED_MIN_CTAS_PER_SM * sm_count(device_index)


def head_walk(variant: BwdVariant, heads_q: int, heads_kv: int, batch: int, n_blocks: int,
              device_index: int) -> tuple[BwdVariant, int]:
    """(variant, cta_heads) of a backward with dK/dV: with GQA, a CTA walks its K/V head's group and
    sums dK/dV in registers (cta_heads = Hq / Hk; the variant's walk_heads twin) where the variant
    allows it and the grid stays large (grouped_heads), else it keeps one query head and the variant
    writes f32 dK/dV per query head (dkv_f32), which the plan sums over the group. The fixed-length and varlen plans both ask here."""
    if heads_q == heads_kv or not variant.need_dkv:
        return variant, 1
    if variant.groupable_heads and grouped_heads(n_blocks * heads_kv * batch, device_index):
        return dataclasses.replace(variant, walk_heads=True), heads_q // heads_kv
    return dataclasses.replace(variant, dkv_f32=True), 1


def _ptr(t) -> int:
    """Device address of a buffer, 0 for one not allocated (a gradient that is not computed)."""
    return t.data_ptr() if t is not None else 0


def backward(dout, q, k, v, out, lse, softmax_scale: float, causal: bool, causal_offset: int,
             deterministic: bool = False, need_dq: bool = True, need_dkv: bool = True, fwd_plan=None,
             local_offset: int | None = None, softcap: float = 0.0, sink=None):
    """Attention backward on the Hopper kernels. Returns (dq, dk, dv), None for a gradient not
    needed, and dsink after them when a sink is given; see the module docstring.

    ``fwd_plan``: the forward launch plan (fwd._FwdPlan) that produced out and lse from exactly
    these q, k, v, scale and mask, as autograd's node knows. Everything a backward plan depends on
    is then fixed but dout's layout and the flags (autograd hands dout over on out's device, in its
    dtype and shape), so the plan is found under that short key, kept on the forward plan (the full
    key costs several times more host time). The kernels' build (FA3LITE_DEBUG) is the one in force
    when the plan was made."""
    need_dq, need_dkv = bool(need_dq), bool(need_dkv)
    deterministic = bool(deterministic) and need_dq    # it orders only the dQ additions
    short = None
    if fwd_plan is not None:
        short = (dout.stride(), dout.data_ptr() % 16 == 0, dout.shape, dout.dtype, deterministic, need_dq,
                 need_dkv)
        plan = fwd_plan.backward_plans.get(short)
        if plan is not None:
            return plan(dout, q, k, v, out, lse, sink)
    mask = band(causal, causal_offset, local_offset)
    key = (q.shape, q.stride(), k.shape, k.stride(), v.shape, v.stride(), dout.stride(), out.stride(),
           lse.shape, lse.stride(), _alignment(q, k, v, dout, out), q.dtype, lse.dtype, dout.dtype, out.dtype, q.device,
           mask, softmax_scale, softcap, sink is not None, deterministic, need_dq, need_dkv, debug_build())
    plan = _plans.get(key)
    if plan is None:
        if not (need_dq or need_dkv):
            raise ValueError("backward needs need_dq or need_dkv (nothing to compute otherwise)")
        B, Sq, Hq, D = q.shape
        if B == 0 or Hq == 0 or Sq == 0 or k.shape[1] == 0:
            # no query or no key: every gradient is zero (no score depends on any input; with no
            # query, no row holds the sink either, and with no key every row's sink probability is 1
            # while dpsum = rowsum(dO * 0) = 0)
            grads = (_zeros(q) if need_dq else None, _zeros(k) if need_dkv else None,
                     _zeros(v) if need_dkv else None)
            return grads if sink is None else grads + (torch.zeros_like(sink),)
        plan = _BwdPlan(dout, q, k, v, out, lse, softmax_scale, mask, deterministic, need_dq, need_dkv,
                        softcap, sink is not None)
        if len(_plans) >= PLAN_LIMIT:
            _plans.clear()
        _plans[key] = plan
    if short is not None:
        if len(fwd_plan.backward_plans) >= _SHORT_LIMIT:
            fwd_plan.backward_plans.clear()
        fwd_plan.backward_plans[short] = plan
    return plan(dout, q, k, v, out, lse, sink)


def _alignment(*tensors) -> tuple[bool, ...]:
    """Which addresses are 16-byte aligned (part of a plan's key: with the strides it decides which
    operands are copied)."""
    return tuple(t.data_ptr() % 16 == 0 for t in tensors)


# A backward's work buffer rides in its gradients' allocation up to this size: its memory then lives
# as long as they do, which costs at most this much, and saves an allocation a call (~10 us on
# autograd's device thread) where host time counts -- at small shapes.
SHARED_WORK_MAX_BYTES = 8 << 20
_SHARED_ALIGN = 128   # elements (256 bytes) between the regions of a shared allocation


@dataclasses.dataclass(frozen=True)
class _SharedLayout:
    """dq, dk, dv (those computed) and, when small, the work buffer in one allocation of the
    gradients' dtype. ``views``: per layout (flash_attn's, torch's) the (element offset, shape,
    strides) of dq, dk, dv, None where not computed; ``work_offset``: the work buffer's byte offset,
    None where it is allocated on its own. Only for 16-bit dK/dV and no sink (whose gradient reads
    the work buffer as tensors)."""
    elements: int
    views: tuple
    work_offset: int | None

    @staticmethod
    def of(plan: "_BwdPlan") -> "_SharedLayout":
        at, offsets = 0, []
        for need, shape in ((plan.need_dq, plan.q_shape), (plan.need_dkv, plan.dk_shape),
                            (plan.need_dkv, plan.dv_shape)):
            offsets.append(at if need else None)
            at += -(-math.prod(shape) // _SHARED_ALIGN) * _SHARED_ALIGN if need else 0
        # flash_attn's (B, S, H, D) views: contiguous, the torch layout's strides in that order
        flash = tuple((shape, (st[0], st[2], st[1], st[3])) for shape, (_, st) in
                      zip((plan.q_shape, plan.dk_shape, plan.dv_shape), plan.torch_shapes))
        views = tuple(tuple(None if o is None else (o, *shape_stride) for o, shape_stride in zip(offsets, layout))
                      for layout in (flash, plan.torch_shapes))
        work_bytes = 4 * plan.work_floats
        es = plan.dtype.itemsize
        work_offset = None
        if work_bytes <= SHARED_WORK_MAX_BYTES:
            work_offset, at = at * es, at + -(-work_bytes // es)
        return _SharedLayout(at, views, work_offset)

    def gradients(self, one: torch.Tensor, torch_layout: bool):
        """(dq, dk, dv) as views of ``one`` in the flash_attn or torch layout, None where not computed."""
        return tuple(None if v is None else one.as_strided(v[1], v[2], v[0]) for v in self.views[torch_layout])


_plans: dict[tuple, "_BwdPlan"] = {}
_SHORT_LIMIT = 16    # dout layouts and flags kept per forward plan


class _BwdPlan:
    """The three launches of one backward call signature, built once: kernels, grids, parameter
    blocks with every scalar field packed, tensor-map makers, buffer sizes, and which operands need a
    copy into a layout the tensor maps take (checks.tma_ready). A call allocates the buffers, fills in
    addresses and maps, and launches."""

    def __init__(self, dout, q, k, v, out, lse, softmax_scale, mask, deterministic, need_dq, need_dkv,
                 softcap, has_sink):
        """mask: (banded, causal_offset, local_offset) as hopper.common.band gives it."""
        B, Sq, Hq, D = q.shape
        Sk, Hk = k.shape[1], k.shape[2]
        dtype = q.dtype
        if not softmax_scale > 0:
            raise ValueError(f"softmax_scale must be > 0 for the Hopper kernels, got {softmax_scale}")
        if dtype not in DTYPE_NAMES:
            raise ValueError(f"q.dtype must be torch.bfloat16 or torch.float16, got {dtype}")
        if Hq % Hk:
            raise ValueError(f"num_heads_q ({Hq}) must be a multiple of num_heads_k ({Hk})")
        if lse.dtype != torch.float32:
            raise ValueError(f"lse must be float32, got {lse.dtype}")
        banded, causal_offset, local_offset = mask
        Dv = v.shape[3]
        variant = for_query_length(BwdVariant(D, DTYPE_NAMES[dtype], banded, False, debug_build(),
                                              need_dq=need_dq, need_dkv=need_dkv, softcap=softcap > 0,
                                              head_dim_v=Dv), Sq)
        self.dev, self.device, self.dtype, self.debug = device_index(q), q.device, dtype, variant.debug
        n_blocks = -(-Sk // variant.block_n)
        variant, cta_heads = head_walk(variant, Hq, Hk, B, n_blocks, self.dev)
        self.dkv_f32 = variant.dkv_f32
        self.pre, self.main, self.post = _kernels(variant, self.dev)   # a runtime failure raises here
        self.need_dq, self.need_dkv, self.deterministic = need_dq, need_dkv, deterministic
        self.stores_first = stores_first(variant, deterministic)
        # Operands whose layout the tensor maps cannot take are copied on every call (tma_ready).
        self.copies = tuple(bool(checks.layout_reasons("t", t)) for t in (q, k, v, dout, out))
        self.any_copy = any(self.copies)
        q, k, v, dout, out = (checks.tma_ready(t) for t in (q, k, v, dout, out))

        block_m = variant.block_m
        m_blocks = -(-Sq // block_m)
        rows_pad = m_blocks * block_m
        ctas = n_blocks * (Hq // cta_heads) * B
        if ctas > MAX_GRID_X:
            raise ValueError(f"too many key blocks for one launch: {ctas} > {MAX_GRID_X}")
        self.rows = B * Hq * rows_pad                      # lse_log2 and dpsum: one buffer, two halves
        self.accum = B * Hq * rows_pad * variant.kernel_dim if need_dq else 0
        self.sems = counter_words(variant, deterministic, B * Hq * m_blocks)
        self.work_floats = work_floats(self.accum, self.sems, self.rows)
        self.group = (Hk, Hq // Hk)
        # dK is q's head dim wide, dV v's (dkv_f32: per query head in f32, then summed over the group)
        kv_heads = Hq if self.dkv_f32 else Hk
        self.q_shape, self.dk_shape, self.dv_shape = (B, Sq, Hq, D), (B, Sk, kv_heads, D), (B, Sk, kv_heads, Dv)
        # the same buffers as torch's (B, H, S, D) tensors (torch_layout calls): shape and strides
        self.torch_shapes = tuple(((b, h, s, d), (s * h * d, d, h * d, 1)) for b, s, h, d in
                                  (self.q_shape, self.dk_shape, self.dv_shape))
        self.stats_shape = (B, Hq, rows_pad) if has_sink else None
        self.shared = _SharedLayout.of(self) if not (self.dkv_f32 or has_sink) else None

        rows_per_block = _AUX_THREADS // (variant.kernel_dim // 8)
        row_blocks = -(-rows_pad // rows_per_block)
        pre_grid = (row_blocks * Hq * B, 1, 1)
        pre_params = PRE_PARAMS.pack(
            dout=0, out=0, lse=0, lse_log2=0, dpsum=0, dq_accum=0, dq_sem=0, tile_counter=0, cu_seqlens_q=0,
            seqused_q=0, do_stride_b=dout.stride(0), do_stride_s=dout.stride(1), do_stride_h=dout.stride(2),
            o_stride_b=out.stride(0), o_stride_s=out.stride(1), o_stride_h=out.stride(2),
            lse_stride_b=lse.stride(0), lse_stride_h=lse.stride(1), lse_stride_s=lse.stride(2),
            seqlen_q=Sq, rows_pad=rows_pad, num_heads=Hq, row_blocks=row_blocks,
            block_m=block_m, sems_per_block=variant.sems_per_block, **PRE_FIXED_LENGTHS)
        blank = tma.BLANK_MAP
        main_grid = (main_ctas(deterministic, ctas, self.dev, variant.persistent), 1, 1)
        main_params = BWD_PARAMS.pack(
            q=blank, k=blank, v=blank, dout=blank, lse_log2=0, dpsum=0, dq_accum=0, dq_sem=0, dk=0, dv=0,
            tile_counter=0, cu_seqlens_q=0, cu_seqlens_k=0, seqused_q=0, seqused_k=0, seq_maps=0,
            seqlen_q=Sq, seqlen_k=Sk, num_heads_q=Hq, head_group=Hq // Hk, cta_heads=cta_heads,
            num_m_blocks=m_blocks, num_n_blocks=n_blocks, causal_offset=causal_offset, local_offset=local_offset,
            deterministic=turn_order(deterministic, variant.rotatable_turns, n_blocks, self.dev),
            softmax_scale=softmax_scale,
            lpt_heads=lpt_heads(q, v, ctas // n_blocks) if banded and not deterministic else 0,
            dq_claims=int(dq_claims(variant, deterministic)),
            rotated_walk=int(rotated_walk(variant, deterministic, m_blocks)), num_tiles=ctas,
            **score_scales(softmax_scale, softcap))
        post_params = POST_PARAMS.pack(dq_accum=0, dq=0, dq_visits=0, cu_seqlens_q=0, seqused_q=0, seqlen_q=Sq,
                                       num_heads=Hq, num_m_blocks=m_blocks, scale=softmax_scale)
        # The fields a call fills in lead each block (PRE/BWD/POST_PARAMS): addresses, and the main
        # kernel's four tensor maps first; each launch packs them with one struct (launch.Prepared).
        # Plain launches: as dependent launches (the main kernel's set-up and K/V loads under the
        # preprocess's last wave) they measured within ±2% either way (benchmarks/RESULTS.md section 35).
        self.pre_launch = launch.Prepared(self.pre, pre_grid, _AUX_THREADS, pre_params, PRE_HEAD, self.dev)
        self.main_launch = launch.Prepared(self.main, main_grid, THREADS, main_params, MAIN_HEAD, self.dev)
        self.post_launch = launch.Prepared(self.post, post_grid(B * Hq * m_blocks), _AUX_THREADS, post_params,
                                           POST_HEAD, self.dev)
        es = q.element_size()
        self.makers = tuple(
            tma.MapMaker(dtype, tma.bshd_geometry(t.shape, t.stride(), es, rows, kernel_dim=variant.kernel_dim),
                         self.dev)
            for t, rows in ((q, block_m), (k, variant.block_n), (v, variant.block_n), (dout, block_m)))

    def _buffer(self, like, shape, stride=None):
        """A buffer the kernels fill completely, with ``like``'s dtype and device (new_empty parses less
        than torch.empty; only ``like``'s dtype and device count: the eager node hands SDPA's
        (B, H, S, D) tensors in as they are) and ``stride`` if given: NaN-poisoned in debug builds,
        so a missed element shows."""
        t = like.new_empty(shape) if stride is None else like.new_empty_strided(shape, stride)
        return t.fill_(math.nan) if self.debug else t

    def __call__(self, dout, q, k, v, out, lse, sink=None, torch_layout=False, shared=False):
        """(dq, dk, dv[, dsink]) of tensors with the plan's signature. ``torch_layout``: they come as
        torch's (B, H, S, D) tensors over the same memory (the plan reads addresses, dtype and device
        only), and the gradients go out as (B, H, S, D) tensors too, made with the (B, S, H, D)
        memory layout the kernels write (no view op each). ``shared``: the gradients may be views of
        one allocation (_SharedLayout; the eager node's, not a custom op's, whose outputs must not
        share storage)."""
        if self.any_copy:
            q, k, v, dout, out = (t.clone(memory_format=torch.contiguous_format) if c else t
                                  for c, t in zip(self.copies, (q, k, v, dout, out)))
        # One work buffer: the dQ accumulator, the turn counters or claim words, lse_log2 and dpsum. The
        # preprocess writes all of it (zeroes the counters, and the accumulator unless the main kernel
        # stores first tiles), so it needs no memset; NaN in debug builds (16-bit NaN pairs read as f32
        # NaN where it shares the gradients' allocation).
        dq = dk = dv = work = base = None
        layout = self.shared if shared else None
        if layout is not None:
            one = self._buffer(q, (layout.elements,))
            dq, dk, dv = layout.gradients(one, torch_layout)
            if layout.work_offset is not None:
                base = one.data_ptr() + layout.work_offset
        else:
            tq, tk, tv = self.torch_shapes if torch_layout else ((self.q_shape, None), (self.dk_shape, None),
                                                                 (self.dv_shape, None))
            dq = self._buffer(q, *tq) if self.need_dq else None
            if self.need_dkv:
                if self.dkv_f32:   # per query head in float32, summed over the group below
                    dk, dv = self._buffer(lse, self.dk_shape), self._buffer(lse, self.dv_shape)
                else:
                    dk, dv = self._buffer(q, *tk), self._buffer(q, *tv)
        if base is None:
            work = self._buffer(lse, (self.work_floats,))   # lse: float32
            base = work.data_ptr()
        accum = base if self.need_dq else 0
        sems, lse_log2, dpsum, counter = work_tail(base, self.accum, self.sems, self.rows)
        visits = sems if self.stores_first else 0   # the counters say which blocks got a first tile
        stream = cdriver.stream(launch.stream_handle(self.dev))
        mq, mk, mv, mdo = self.makers
        with on_device(self.dev):
            self.pre_launch.launch(stream, dout.data_ptr(), out.data_ptr(), lse.data_ptr(), lse_log2, dpsum,
                                   0 if visits else accum, sems, counter)
            self.main_launch.launch(stream, mq(q.data_ptr()), mk(k.data_ptr()), mv(v.data_ptr()),
                                    mdo(dout.data_ptr()), lse_log2, dpsum, accum, sems, _ptr(dk), _ptr(dv),
                                    counter)
            if self.need_dq:
                self.post_launch.launch(stream, accum, dq.data_ptr(), visits)
        dsink = None
        if self.stats_shape is not None:
            dsink = sink_grad(work, self.accum + self.sems, self.stats_shape, sink)
        del work   # the launches are queued on the stream: the caching allocator keeps it until they ran
        if self.dkv_f32:
            dk, dv = (g.unflatten(2, (self.group[0], self.group[1])).sum(dim=3).to(self.dtype) for g in (dk, dv))
            if torch_layout:
                dk, dv = dk.transpose(1, 2), dv.transpose(1, 2)
        return (dq, dk, dv) if dsink is None else (dq, dk, dv, dsink)
