"""Host side of the Hopper forward kernel on packed variable-length sequences (kVarlen).

Forward (forward_varlen) and backward (backward_varlen, the three launches of fa3lite/hopper/bwd.py
with each sequence's rows found through cu_seqlens). Shapes (flash_attn's varlen layout): q (total_q, Hq, D), k (total_k, Hk, D), v (total_k, Hk, Dv) (Dv as
in fa3lite/hopper/fwd.py), last dim contiguous;
cu_seqlens_q/k int32 (B + 1,) cumulative row offsets, seqused_q/k None or int32 (B,) (sequence b uses
the first seqused[b] of its rows). Returns out (total_q, Hq, Dv) contiguous, zero in rows no sequence
uses, and lse (Hq, total_q) float32, natural log, -inf in such rows.

Mask: per sequence, key j is visible to query i iff (not causal or j <= i + Sk_b - Sq_b + causal_offset)
and (local_offset is None or j >= i + Sk_b - Sq_b + local_offset): both edges relative to the
sequence's own bottom-right diagonal. softcap and sink as in fa3lite/hopper/fwd.py.

The dense varlen kernel runs a persistent grid (one CTA per SM at most): its CTAs claim the tiles
(query block, head, sequence) of real rows from a counter, sequence after sequence, each decoding
its claim from cu_seqlens on the device (cuda_src/attention/scheduler.cuh varlen_tile); the host
knows only max_seqlen_q, which bounds the count. The split-KV kernel runs one CTA per (query block
of max_seqlen_q, head, sequence, split); a CTA past its sequence's end exits. The dense kernel's
tiles load through copies of the q, k, v tensor maps pointed at their sequence and cut at its end
(make_seq_maps), so boxes past the end arrive as zeros and no row of a neighbouring sequence is ever
read. The split kernel, whose CTAs live for a few key blocks, loads through the tensors' own maps at
the sequence's rows (no map to write before the first load): rows past the end may arrive, but they
only meet masked scores, cleared V rows and query rows never written (cuda_src/attention/config.cuh
kSeqMaps). O is written row by row, never past the end.
"""
from __future__ import annotations

import functools
import math

import torch

from .. import checks
from ..runtime import cdriver, launch, tma
from ..runtime.driver import on_device
from ..variants import FWD_PARAMS, FwdTile, FwdVariant, GroupedRows, split_tile, varlen_tile
from . import bwd, combine, fwd, splits
from .common import (DTYPE_NAMES, MAX_GRID_X, PLAN_LIMIT, band, debug_build, device_index, score_scales,
                     sm_count)

_MAPS_PER_CTA = 3     # q, k, v; a persistent CTA keeps two sets (scheduler.cuh kMapSets)
_ALIGN = 128          # a tensor map's alignment (and a generous one for the f32 accumulators)
_PAGE_ROW_MULTIPLE = 8   # paged chunks start at multiples of 8 rows (1024 bytes): the swizzle's period


def _aligned(nbytes: int) -> int:
    return -(-nbytes // _ALIGN) * _ALIGN


@functools.cache
def _variant(head_dim: int, dtype: str, causal: bool, debug: bool, softcap: bool, head_dim_v: int,
             sink: bool, split: bool, paged: bool = False, tile: FwdTile | None = None) -> FwdVariant:
    return FwdVariant(head_dim, dtype, causal, debug=debug, tile=tile, softcap=softcap, varlen=True,
                      head_dim_v=head_dim_v, sink=sink, split=split, paged=paged)


def page_rows(page_size: int, head_dim: int) -> int:
    """Rows of one paged K/V copy: the largest divisor of both the page size and the split kernel's
    key block (a copy never straddles pages and the chunks tile the block). The kernel needs a
    multiple of 8 (chunks at 1024-byte offsets keep the 128-byte swizzle); 0 when there is none
    (the caller gathers the pages instead)."""
    rows = math.gcd(page_size, split_tile(head_dim).block_n)
    return rows if rows % _PAGE_ROW_MULTIPLE == 0 else 0


def _packed(t):
    """(shape, strides) of a (total, H, D) tensor as the (1, total, H, D) tensor the maps cover."""
    return (1, *t.shape), (t.shape[0] * t.stride(0), *t.stride())


class _VarlenPlan:
    """The forward launch of one varlen call signature, built once (like fwd._FwdPlan): kernel, grid,
    packed parameter block, map makers; a call allocates out, lse and the CTAs' map copies and fills
    in addresses."""

    def __init__(self, q, k, v, batch: int, max_seqlen_q: int, max_seqlen_k: int, softmax_scale: float, mask,
                 softcap: float, has_sink: bool, num_splits: int, rows_covered: bool = False,
                 pack_group: int = 1, paged: tuple[int, int] | None = None, grouped: GroupedRows | None = None):
        Hk, Dv = k.shape[1], v.shape[2]
        banded, causal_offset, local_offset = mask
        split = num_splits >= 0
        if grouped is not None:   # a decode step's q (B, Sq, Hq, D): rows (position, query head) per K/V head
            if not (split and q.dim() == 4 and q.shape[0] == batch and grouped.group_rows == pack_group > 1):
                raise ValueError(f"grouped rows: expected the split kernel and q (B={batch}, Sq, Hq, D) with "
                                 f"pack_group {grouped.group_rows} > 1, got num_splits {num_splits}, q "
                                 f"{tuple(q.shape)}, pack_group {pack_group}")
            total_q, Hq, D = batch * q.shape[1] * pack_group, q.shape[2] // pack_group, q.shape[3]
            row_group, q_strides, box_groups = grouped
        else:
            total_q, Hq, D = q.shape
            row_group, q_strides, box_groups = 1, (q.stride(0), 0, q.stride(1)), None
        variant = _variant(D, DTYPE_NAMES[q.dtype], banded, debug_build(), softcap > 0, Dv, has_sink, split,
                           paged is not None, None if split else varlen_tile(D, banded, max_seqlen_k, softcap > 0))
        self.dev = device_index(q)
        self.kernel = fwd._loaded(variant, self.dev)
        m_blocks = -(-max_seqlen_q // variant.block_m)
        tiles = m_blocks * Hq * batch
        if split and num_splits == 0:
            num_splits = splits.num_splits(tiles, -(-max_seqlen_k // variant.block_n), sm_count(self.dev))
        self.splits = min(max(num_splits, 1), splits.MAX_SPLITS)
        if batch > combine.MAX_SEQUENCES:   # the combine's grid has a row per sequence; so many fill the GPU anyway
            self.splits = 1
        tiles *= self.splits
        if tiles > MAX_GRID_X:
            raise ValueError(f"too many tiles for one launch: {tiles} > {MAX_GRID_X}")
        persistent = variant.tile.persistent
        ctas = min(tiles, sm_count(self.dev)) if persistent else tiles
        self.grid, self.threads = (ctas, 1, 1), variant.threads
        self.device, self.dtype = q.device, q.dtype
        # where rows go: groups of row_group rows (cuda_src/attention/params.cuh); elements
        # (group, member, head) for O, then for LSE
        if grouped is not None:   # out (B, Sq, Hq, Dv) and lse (B, Sq, Hq) contiguous, in the step's layout
            self.out_shape, self.lse_shape = (*q.shape[:3], Dv), tuple(q.shape[:3])
            o_strides, lse_strides = (row_group * Hq * Dv, Dv, row_group * Dv), (row_group * Hq, 1, row_group)
        else:
            self.out_shape, self.lse_shape = (total_q, Hq, Dv), (Hq, total_q)
            o_strides, lse_strides = (Hq * Dv, 0, Dv), (1, 0, total_q)
        box_groups = box_groups or variant.block_m
        es = q.element_size()
        blank = tma.BLANK_MAP
        self.template = FWD_PARAMS.pack(
            q=blank, k=blank, v=blank, o=blank, lse=0, tile_sched=0, sink=0,
            cu_seqlens_q=0, cu_seqlens_k=0, seqused_q=0, seqused_k=0, q_base=0, k_base=0, v_base=0, o_base=0,
            seq_maps=0, o_accum=0, lse_accum=0,
            q_row_bytes=q.stride(0) * es, k_row_bytes=k.stride(0) * es, v_row_bytes=v.stride(0) * es,
            o_row_bytes=o_strides[0] * es, o_member_bytes=o_strides[1] * es, o_head_bytes=o_strides[2] * es,
            lse_row_stride=lse_strides[0], lse_member_stride=lse_strides[1], lse_head_stride=lse_strides[2],
            seqlen_q=total_q,
            seqlen_k=paged[0] * paged[1] if paged else k.shape[0], num_heads_q=Hq, head_group=Hq // Hk,
            num_m_blocks=m_blocks,
            page_table=0, page_size=paged[0] if paged else 0, pages_per_seq=paged[1] if paged else 0,
            page_rows=page_rows(paged[0], D) if paged else 0,
            num_tiles=tiles, num_splits=self.splits, pack_group=pack_group, row_group=row_group,
            # banded on the persistent grid: each sequence's tiles longest first within groups of heads
            # whose K/V (at the longest key range) fit in L2 (scheduler.cuh varlen_tile)
            lpt_heads=fwd.lpt_heads(max_seqlen_k, D, Dv, es, max(Hq // Hk, 1), Hq, self.dev)
            if banded and persistent else 0,
            q_tile_bytes=row_group * box_groups * variant.kernel_dim * es, causal_offset=causal_offset,
            local_offset=local_offset,
            **score_scales(softmax_scale, softcap),
        )
        # Whether out and lse need filling before the launch: not when every row belongs to a sequence
        # (rows_covered: the caller's layout says so), nor on the persistent grid, whose kernel writes
        # the rows of no sequence itself (fwd_epilogue.cuh fill_gap_rows); the split kernel and its
        # combine write only the sequences' rows.
        self.fills = not (rows_covered or persistent)
        self.debug = variant.debug
        # One workspace per call, each part 128-byte aligned: (persistent) the tile counter and the
        # CTAs' hand-off slots, zeroed per call; the CTAs' maps; (split) the partial O and LSE.
        self.sched_bytes = _aligned(4 * (1 + ctas)) if persistent else 0
        maps = 0 if split else ctas * _MAPS_PER_CTA * (2 if persistent else 1)   # config.cuh kSeqMaps
        self.work_bytes = self.sched_bytes + _aligned(maps * tma.MAP_BYTES)
        # A caller that drops lse (need_lse=False, e.g. a decode step): the kernels write it into the
        # workspace instead, one allocation less per call (when nothing is pre-filled)
        self.lse_bytes = _aligned(4 * math.prod(self.lse_shape))
        self.accum_offsets = (0, 0)
        self.combine = None
        if self.splits > 1:   # partial results, then the combine kernel (hopper/combine.py)
            o_bytes = _aligned(4 * self.splits * total_q * Hq * Dv)
            self.accum_offsets = (self.work_bytes, self.work_bytes + o_bytes)
            self.work_bytes += o_bytes + _aligned(4 * self.splits * Hq * total_q)
            cv = combine.CombineVariant(DTYPE_NAMES[q.dtype], Dv)
            template = combine.COMBINE_PARAMS.pack(
                o_accum=0, lse_accum=0, out=0, lse=0, sink=0, cu_seqlens_q=0, seqused_q=0,
                out_row_stride=o_strides[0], out_member_stride=o_strides[1], out_head_stride=o_strides[2],
                lse_row_stride=lse_strides[0], lse_member_stride=lse_strides[1], lse_head_stride=lse_strides[2],
                total_q=total_q, num_heads=Hq, num_splits=self.splits, row_group=row_group)
            # a dependent launch: the combine starts while the split kernel's CTAs finish (combine.cu)
            self.combine = launch.Prepared(combine.loaded(cv, self.dev), combine.grid(batch, max_seqlen_q, Hq),
                                           combine.THREADS, template, combine.HEAD, self.dev, dependent=True)
        # What a call fills in leads the block (FWD_PARAMS): the maps, then the addresses; one struct
        # packs them per launch (launch.Prepared). Only a fixed-length kernel staging O reads an o map: blank here.
        self.prepared = launch.Prepared(self.kernel, self.grid, self.threads, self.template, VARLEN_HEAD, self.dev)
        # paged: K and V map the pool, boxes of one chunk of rows and one 64-column block (fwd_producer.cuh)
        kv_box = (page_rows(paged[0], D), 1) if paged else (variant.block_n, None)
        if split:   # q's rows in groups (tile_io.cuh load_groups)
            q_geometry = tma.grouped_geometry(total_q // row_group, row_group, Hq, D, q_strides, es, box_groups,
                                              variant.kernel_dim)
        else:
            q_geometry = tma.bshd_geometry(*_packed(q), es, variant.block_m, kernel_dim=variant.kernel_dim)
        self.makers = (tma.MapMaker(q.dtype, q_geometry, self.dev),) + tuple(
            tma.MapMaker(q.dtype, tma.bshd_geometry(*_packed(t), es, kv_box[0], kv_box[1],
                                                    kernel_dim=variant.kernel_dim), self.dev) for t in (k, v))

    def __call__(self, q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q=None, seqused_k=None, sink=None,
                 page_table=None, need_lse=True):
        """(out, lse); lse None where ``need_lse`` is False and nothing is pre-filled (the kernels then
        write it into the workspace)."""
        lse = None
        work_bytes = self.work_bytes
        if not self.fills:   # the kernels write every element: NaN first in debug builds, so a miss shows
            out = q.new_empty(self.out_shape)
            if need_lse:
                lse = q.new_empty(self.lse_shape, dtype=torch.float32)
            else:
                work_bytes += self.lse_bytes
            if self.debug:
                out.fill_(math.nan)
                if lse is not None:
                    lse.fill_(math.nan)
        else:
            out = torch.zeros(self.out_shape, dtype=self.dtype, device=self.device)
            lse = torch.full(self.lse_shape, float("-inf"), dtype=torch.float32, device=self.device)
        if self.sched_bytes:
            work = torch.zeros((work_bytes,), dtype=torch.uint8, device=self.device)
        else:
            work = q.new_empty((work_bytes,), dtype=torch.uint8)
        base = work.data_ptr()
        o_accum, lse_accum = base + self.accum_offsets[0], base + self.accum_offsets[1]
        used_q = 0 if seqused_q is None else seqused_q.data_ptr()
        sink_ptr = 0 if sink is None else sink.data_ptr()
        mq, mk, mv = self.makers
        q_ptr, k_ptr, v_ptr, out_ptr = q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr()
        cu_q = cu_seqlens_q.data_ptr()
        lse_ptr = lse.data_ptr() if lse is not None else base + self.work_bytes
        stream = cdriver.stream(launch.stream_handle(self.dev))
        with on_device(self.dev):
            self.prepared.launch(stream, mq(q_ptr), mk(k_ptr), mv(v_ptr), tma.BLANK_MAP, lse_ptr, base, sink_ptr,
                                 out_ptr, cu_q, cu_seqlens_k.data_ptr(), used_q,
                                 0 if seqused_k is None else seqused_k.data_ptr(), q_ptr, k_ptr, v_ptr,
                                 base + self.sched_bytes, o_accum, lse_accum,
                                 0 if page_table is None else page_table.data_ptr())
            if self.combine is not None:
                self.combine.launch(stream, o_accum, lse_accum, out_ptr, lse_ptr, sink_ptr, cu_q, used_q)
        return out, lse


# what a call of the varlen / split forward fills in (the maps and addresses leading FwdParams)
VARLEN_HEAD = FWD_PARAMS.head("q", "k", "v", "o", "lse", "tile_sched", "sink", "o_base", "cu_seqlens_q",
                              "cu_seqlens_k", "seqused_q", "seqused_k", "q_base", "k_base", "v_base", "seq_maps",
                              "o_accum", "lse_accum", "page_table")


_plans: dict[tuple, _VarlenPlan] = {}


def forward_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q: int, softmax_scale: float, causal: bool,
                   causal_offset: int, local_offset: int | None = None, softcap: float = 0.0, sink=None,
                   seqused_q=None, seqused_k=None, max_seqlen_k: int = 0, num_splits: int = -1, pack_group: int = 1):
    """Varlen attention forward on the Hopper kernel. Returns (out, lse); see the module docstring.
    cu_seqlens_*, seqused_* int32 contiguous on q's device; sink None or (Hq,) float32 contiguous.
    num_splits: -1 the dense varlen kernel; >= 0 the split-KV (decode) kernel with that many CTAs per
    query tile (0: hopper/splits.py picks from the shape and max_seqlen_k; at most splits.MAX_SPLITS).
    pack_group: rows per query position (packed GQA, no sink; fallback.forward_varlen has the layout)."""
    if pack_group != 1 and sink is not None:
        raise ValueError("pack_group > 1 takes no sink (the kernel reads sinks per packed head)")
    if not softmax_scale > 0:
        raise ValueError(f"softmax_scale must be > 0 for the Hopper kernels, got {softmax_scale}")
    batch = cu_seqlens_q.shape[0] - 1
    total_q, Hq, D = q.shape
    if batch <= 0 or max_seqlen_q <= 0 or total_q == 0 or Hq == 0 or k.shape[0] == 0:
        out = torch.zeros((total_q, Hq, v.shape[2]), dtype=q.dtype, device=q.device)
        if sink is not None and k.shape[0] == 0:
            return out, sink.float().view(Hq, 1).expand(Hq, total_q).contiguous()
        return out, torch.full((Hq, total_q), float("-inf"), dtype=torch.float32, device=q.device)
    plan = forward_varlen_plan(q, k, v, batch, max_seqlen_q, softmax_scale, causal, causal_offset, local_offset,
                               softcap, sink is not None, seqused_q is not None or seqused_k is not None,
                               max_seqlen_k, num_splits, pack_group=pack_group)
    return plan(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, sink)


def forward_varlen_plan(q, k, v, batch: int, max_seqlen_q: int, softmax_scale: float, causal: bool,
                        causal_offset: int, local_offset: int | None, softcap: float, has_sink: bool,
                        seqused: bool, max_seqlen_k: int = 0, num_splits: int = -1,
                        rows_covered: bool = False, pack_group: int = 1,
                        paged: tuple[int, int] | None = None, grouped: GroupedRows | None = None) -> _VarlenPlan:
    """The launch plan forward_varlen runs for this signature (built on first use): call it as
    plan(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, sink) -> (out, lse) with tensors
    of the signature's shapes, strides, dtype and device, and at least one query row and key (the
    callers that keep a plan, fa3lite/kvcache.py, check that once). rows_covered: the caller's
    cu_seqlens_q / seqused_q give every row of q to a sequence, so out and lse need no fill.
    paged: (page_size, pages_per_seq) to read K and V in place from a page pool: k, v are the pool as
    rows (num_pages * page_size, Hk, D), cu_seqlens_k all zeros, and the plan takes page_table
    (B, pages_per_seq) int32 contiguous as its last argument; the split kernel only (num_splits >= 0),
    page_rows(page_size, ...) > 0.
    grouped: q is a decode step's queries (B, Sq, Hq, D), read in place as the split kernel's packed
    rows (position, query head of a group of pack_group), grouped.strides being q's (group, member,
    head) strides in elements (fa3lite.kvcache.step_rows); out / lse come back as (B, Sq, Hq, Dv) /
    (B, Sq, Hq), the step's own layout: no copies on either side."""
    mask = band(causal, causal_offset, local_offset)
    key = (q.shape, q.stride(), k.shape, k.stride(), v.shape, v.stride(), q.dtype, q.device, batch, max_seqlen_q, mask,
           softmax_scale, softcap, has_sink, seqused, debug_build(), num_splits,
           _by_max_seqlen_k(q, mask, softcap, max_seqlen_k, num_splits), rows_covered, pack_group, paged, grouped)
    plan = _plans.get(key)
    if plan is None:
        plan = _VarlenPlan(q, k, v, batch, max_seqlen_q, max_seqlen_k, softmax_scale, mask, softcap, has_sink,
                           num_splits, rows_covered, pack_group, paged, grouped)
        if len(_plans) >= PLAN_LIMIT:
            _plans.clear()
        _plans[key] = plan
    return plan


def _by_max_seqlen_k(q, mask, softcap: float, max_seqlen_k: int, num_splits: int):
    """What of max_seqlen_k a forward plan depends on: the split count it picks (num_splits 0), the
    dense kernel's tile (num_splits -1), nothing otherwise."""
    if num_splits == 0:
        return max_seqlen_k
    return varlen_tile(q.shape[-1], mask[0], max_seqlen_k, softcap > 0) if num_splits < 0 else None


class _VarlenBwdPlan:
    """The backward's three launches on packed sequences (fa3lite/hopper/bwd.py has the scheme): the
    preprocess and postprocess find each sequence's rows through cu_seqlens_q, the preprocess also
    builds the main kernel's maps of each sequence (bwd_preprocess.cu write_seq_maps); the statistics,
    dQ accumulator and turn counters are laid out per (sequence, head) padded to max_seqlen_q, as for
    fixed lengths."""

    def __init__(self, dout, q, k, v, out, lse, batch, max_seqlen_q, max_seqlen_k, softmax_scale, mask,
                 deterministic, softcap, has_sink, seqused):
        total_q, Hq, D = q.shape
        total_k, Hk = k.shape[0], k.shape[1]
        banded, causal_offset, local_offset = mask
        Dv = v.shape[2]
        variant = bwd.for_query_length(bwd.BwdVariant(D, DTYPE_NAMES[q.dtype], banded, False, debug_build(),
                                                      softcap=softcap > 0, varlen=True, head_dim_v=Dv), max_seqlen_q)
        self.dev, self.device, self.dtype, self.debug = device_index(q), q.device, q.dtype, variant.debug
        n_blocks = -(-max_seqlen_k // variant.block_n)
        variant, cta_heads = bwd.head_walk(variant, Hq, Hk, batch, n_blocks, self.dev)
        self.dkv_f32 = variant.dkv_f32
        self.pre, self.main, self.post = bwd._kernels(variant, self.dev)
        self.deterministic = deterministic
        self.stores_first = bwd.stores_first(variant, deterministic)
        self.copies = tuple(bool(checks.layout_reasons("t", t.unsqueeze(0))) for t in (dout, out))
        dout, out = (checks.tma_ready(t.unsqueeze(0))[0] for t in (dout, out))
        bm = variant.block_m
        m_blocks = -(-max_seqlen_q // bm)
        rows_pad = m_blocks * bm
        self.ctas = n_blocks * (Hq // cta_heads) * batch
        if self.ctas > MAX_GRID_X:
            raise ValueError(f"too many key blocks for one launch: {self.ctas} > {MAX_GRID_X}")
        self.rows = batch * Hq * rows_pad
        self.accum = batch * Hq * m_blocks * bm * variant.kernel_dim
        self.sems = bwd.counter_words(variant, deterministic, batch * Hq * m_blocks)
        # dK is q's head dim wide, dV v's; dkv_f32: per query head in f32, then summed over the group
        heads = Hq if self.dkv_f32 else Hk
        es = q.element_size()
        self.dkv_dtype = torch.float32 if self.dkv_f32 else self.dtype
        dkv_bytes = 4 if self.dkv_f32 else es
        self.q_shape, self.dk_shape, self.dv_shape = (total_q, Hq, D), (total_k, heads, D), (total_k, heads, Dv)
        self.group = (Hk, Hq // Hk)
        self.stats_shape = (batch, Hq, rows_pad) if has_sink else None
        rows_per_block = bwd._AUX_THREADS // (variant.kernel_dim // 8)
        row_blocks = -(-rows_pad // rows_per_block)
        self.pre_grid = (row_blocks * Hq * batch, 1, 1)
        self.pre_params = bwd.PRE_PARAMS.pack(
            dout=0, out=0, lse=0, lse_log2=0, dpsum=0, dq_accum=0, dq_sem=0, tile_counter=0, cu_seqlens_q=0,
            seqused_q=0, do_stride_b=0, do_stride_s=dout.stride(0), do_stride_h=dout.stride(1),
            o_stride_b=0, o_stride_s=out.stride(0), o_stride_h=out.stride(1),
            lse_stride_b=0, lse_stride_h=lse.stride(0), lse_stride_s=lse.stride(1),
            seqlen_q=0, rows_pad=rows_pad, num_heads=Hq, row_blocks=row_blocks, block_m=bm,
            sems_per_block=variant.sems_per_block, dq=0, dk=0, dv=0, cu_seqlens_k=0, seqused_k=0,
            dq_row_bytes=Hq * D * es, dk_row_bytes=heads * D * dkv_bytes, dv_row_bytes=heads * Dv * dkv_bytes,
            total_q=total_q, total_k=total_k, num_seqs=batch, seq_maps=0, q_base=0, k_base=0, v_base=0,
            q_row_bytes=q.stride(0) * es, k_row_bytes=k.stride(0) * es, v_row_bytes=v.stride(0) * es,
            q_map=tma.BLANK_MAP, k_map=tma.BLANK_MAP, v_map=tma.BLANK_MAP, dout_map=tma.BLANK_MAP)
        self.seq_maps = batch * 4 * tma.MAP_BYTES
        blank = tma.BLANK_MAP
        self.main_grid = (bwd.main_ctas(deterministic, self.ctas, self.dev, variant.persistent), 1, 1)
        self.main_params = bwd.BWD_PARAMS.pack(
            q=blank, k=blank, v=blank, dout=blank, lse_log2=0, dpsum=0, dq_accum=0, dq_sem=0, dk=0, dv=0,
            tile_counter=0, cu_seqlens_q=0, cu_seqlens_k=0, seqused_q=0, seqused_k=0, seq_maps=0, seqlen_q=0, seqlen_k=0,
            num_heads_q=Hq, head_group=Hq // Hk, cta_heads=cta_heads, num_m_blocks=m_blocks, num_n_blocks=n_blocks,
            causal_offset=causal_offset, local_offset=local_offset,
            deterministic=bwd.turn_order(deterministic, variant.rotatable_turns, n_blocks, self.dev),
            lpt_heads=bwd.lpt_pairs(max_seqlen_q, D, Dv, es, self.ctas // n_blocks, q.device)
            if banded and not deterministic else 0,
            dq_claims=int(bwd.dq_claims(variant, deterministic)),
            rotated_walk=int(bwd.rotated_walk(variant, deterministic, m_blocks)), softmax_scale=softmax_scale,
            num_tiles=self.ctas,
            **score_scales(softmax_scale, softcap))
        self.post_grid = bwd.post_grid(batch * Hq * m_blocks)
        self.post_params = bwd.POST_PARAMS.pack(dq_accum=0, dq=0, dq_visits=0, cu_seqlens_q=0, seqused_q=0,
                                                seqlen_q=0, num_heads=Hq, num_m_blocks=m_blocks, scale=softmax_scale)
        pre, at, post = bwd.PRE_PARAMS.offsets, bwd.BWD_PARAMS.offsets, bwd.POST_PARAMS.offsets
        # the templates of the sequences' maps, which the preprocess builds (the main kernel's own
        # q, k, v, dout maps stay blank)
        self.maps = tuple(
            (pre[name], tma.MapMaker(q.dtype, tma.bshd_geometry(*_packed(t), es, rows, kernel_dim=variant.kernel_dim),
                                     self.dev))
            for name, t, rows in (("q_map", q, bm), ("k_map", k, variant.block_n), ("v_map", v, variant.block_n),
                                  ("dout_map", dout, bm)))
        self.pre_at = tuple(pre[f] for f in ("dout", "out", "lse", "lse_log2", "dpsum", "dq_accum", "dq_sem",
                                             "tile_counter", "cu_seqlens_q", "seqused_q", "dq", "dk", "dv", "cu_seqlens_k",
                                             "seqused_k", "seq_maps", "q_base", "k_base", "v_base"))
        self.main_at = tuple(at[f] for f in ("lse_log2", "dpsum", "dq_accum", "dq_sem", "dk", "dv", "tile_counter",
                                             "cu_seqlens_q",
                                             "cu_seqlens_k", "seqused_q", "seqused_k", "seq_maps"))
        self.post_at = tuple(post[f] for f in ("dq_accum", "dq", "dq_visits", "cu_seqlens_q", "seqused_q"))

    def _buffer(self, shape, dtype):
        """A buffer the kernels fill completely: NaN-poisoned in debug builds, so a missed element shows."""
        if self.debug:
            return torch.full(shape, float("nan"), dtype=dtype, device=self.device)
        return torch.empty(shape, dtype=dtype, device=self.device)

    def _launch(self, kernel, grid, threads, params, addresses, stream, maps=()):
        bwd.launch_packed(kernel, grid, threads, self.dev, params, addresses, stream, maps)

    def __call__(self, dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, sink):
        dout, out = (t.clone(memory_format=torch.contiguous_format) if c else t
                     for c, t in zip(self.copies, (dout, out)))
        stream = launch.stream_handle(self.dev)
        work = self._buffer((bwd.work_floats(self.accum, self.sems, self.rows),), torch.float32)
        accum = work.data_ptr()
        sems, lse_log2, dpsum, counter = bwd.work_tail(accum, self.accum, self.sems, self.rows)
        visits = sems if self.stores_first else 0   # first tiles are stored: the accumulator is not zeroed
        # the preprocess zeroes the rows no sequence uses, the other kernels write every other row
        dq = self._buffer(self.q_shape, self.dtype)
        dk, dv = (self._buffer(shape, self.dkv_dtype) for shape in (self.dk_shape, self.dv_shape))
        maps = torch.empty((self.seq_maps,), dtype=torch.uint8, device=self.device)
        used_q = seqused_q.data_ptr() if seqused_q is not None else 0
        used_k = seqused_k.data_ptr() if seqused_k is not None else 0
        with on_device(self.dev):
            self._launch(self.pre, self.pre_grid, bwd._AUX_THREADS, self.pre_params,
                         zip(self.pre_at, (dout.data_ptr(), out.data_ptr(), lse.data_ptr(), lse_log2, dpsum,
                                           0 if visits else accum, sems, counter, cu_seqlens_q.data_ptr(), used_q,
                                           dq.data_ptr(), dk.data_ptr(), dv.data_ptr(), cu_seqlens_k.data_ptr(),
                                           used_k, maps.data_ptr(), q.data_ptr(), k.data_ptr(), v.data_ptr())),
                         stream, zip(self.maps, (q, k, v, dout)))
            self._launch(self.main, self.main_grid, bwd.THREADS, self.main_params,
                         zip(self.main_at, (lse_log2, dpsum, accum, sems, dk.data_ptr(), dv.data_ptr(), counter,
                                            cu_seqlens_q.data_ptr(), cu_seqlens_k.data_ptr(), used_q, used_k,
                                            maps.data_ptr())), stream)
            self._launch(self.post, self.post_grid, bwd._AUX_THREADS, self.post_params,
                         zip(self.post_at, (accum, dq.data_ptr(), visits, cu_seqlens_q.data_ptr(), used_q)), stream)
        dsink = None
        if self.stats_shape is not None:
            dsink = bwd.sink_grad(work, self.accum + self.sems, self.stats_shape, sink)
        del work, maps
        if self.dkv_f32:
            dk, dv = (g.unflatten(1, self.group).sum(dim=2).to(self.dtype) for g in (dk, dv))
        return (dq, dk, dv) if dsink is None else (dq, dk, dv, dsink)


_bwd_plans: dict[tuple, _VarlenBwdPlan] = {}


def backward_varlen(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q: int, max_seqlen_k: int,
                    softmax_scale: float, causal: bool, causal_offset: int, local_offset: int | None = None,
                    softcap: float = 0.0, sink=None, seqused_q=None, seqused_k=None, deterministic: bool = False):
    """Varlen attention backward on the Hopper kernels: (dq, dk, dv) shaped like q, k, v (zero in rows
    no sequence uses), and dsink after them with a sink; the forward's arguments, lse (Hq, total_q)."""
    batch = cu_seqlens_q.shape[0] - 1
    total_q, Hq, D = q.shape
    if batch <= 0 or max_seqlen_q <= 0 or max_seqlen_k <= 0 or total_q == 0 or Hq == 0 or k.shape[0] == 0:
        grads = tuple(torch.zeros_like(t, memory_format=torch.contiguous_format) for t in (q, k, v))
        return grads if sink is None else grads + (torch.zeros_like(sink),)
    mask = band(causal, causal_offset, local_offset)
    seqused = seqused_q is not None or seqused_k is not None
    key = (q.shape, q.stride(), k.shape, k.stride(), v.shape, v.stride(), dout.stride(), out.stride(), lse.stride(),
           dout.data_ptr() % 16 == 0, out.data_ptr() % 16 == 0, q.dtype, q.device, batch, max_seqlen_q, max_seqlen_k,
           mask, softmax_scale, softcap, sink is not None, seqused, bool(deterministic), debug_build())
    plan = _bwd_plans.get(key)
    if plan is None:
        plan = _VarlenBwdPlan(dout, q, k, v, out, lse, batch, max_seqlen_q, max_seqlen_k, softmax_scale, mask,
                              bool(deterministic), softcap, sink is not None, seqused)
        if len(_bwd_plans) >= PLAN_LIMIT:
            _bwd_plans.clear()
        _bwd_plans[key] = plan
    return plan(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, sink)
