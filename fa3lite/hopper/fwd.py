"""Host side of the Hopper forward kernel: variant choice, tensor maps, params, launch.

Shapes (flash_attn layout): q (B, Sq, Hq, D), k (B, Sk, Hk, D), v (B, Sk, Hk, Dv), any strides with the
last dim contiguous; out (B, Sq, Hq, Dv) contiguous; lse (B, Hq, Sq) fp32, natural log. Dv == D, or
(D, Dv) = (192, 128) (variants.HEAD_DIM_PAIRS).

Mask: key j is visible to query i iff (not causal or j <= i + causal_offset) and (local_offset is None
or j >= i + local_offset). softcap > 0: scores become softcap * tanh(scale * q.k / softcap). sink: None
or a (Hq,) float32 contiguous tensor of learnable sink logits, one extra term exp(sink[h]) in every
row's softmax denominator (lse includes it).
"""
from __future__ import annotations

import functools
import math

import torch

from ..runtime import cdriver, launch, tma
from ..runtime.driver import on_device
from ..variants import FWD_PARAMS, FwdTile, FwdVariant, fwd_tile
from .common import (DTYPE_NAMES, MAX_GRID_X, PLAN_LIMIT, band, debug_build, device_index,
                     lpt_group, score_scales, sm_count)


def fwd_variant(q, causal: bool, seqlen_k: int, softcap: bool = False, head_dim_v: int | None = None,
                sink: bool = False) -> FwdVariant:
    """causal: the banded variant (hopper.common.band); head_dim_v: V's head dim (None: q's)."""
    return _variant(q.shape[-1], DTYPE_NAMES[q.dtype], bool(causal), debug_build(),
                    fwd_tile(q.shape[-1], causal, seqlen_k, bool(softcap)), bool(softcap), head_dim_v or q.shape[-1],
                    bool(sink))


@functools.cache
def _variant(head_dim: int, dtype: str, causal: bool, debug: bool, tile: FwdTile, softcap: bool,
             head_dim_v: int, sink: bool) -> FwdVariant:
    return FwdVariant(head_dim, dtype, causal, debug=debug, tile=tile, softcap=softcap, head_dim_v=head_dim_v,
                      sink=sink)


@functools.cache
def _loaded(variant: FwdVariant, device_index: int) -> launch.Loaded:
    """The variant's kernel on one device; cached here so a call hashes a small key, not the spec."""
    return launch.load(variant.spec(), device_index, variant.smem_bytes)


class _FwdPlan:
    """A forward launch for one call signature (shapes, strides, dtype, device, mask, scale, softcap,
    whether a sink comes), built once: kernel, grid, the parameter block with every scalar field
    packed, and a tensor-map maker per operand. A call then only allocates out/lse, fills in the maps
    and the LSE (and sink) address, and launches."""

    __slots__ = ("grid", "dev", "device", "out_shape", "out_stride", "lse_shape", "prepared", "makers",
                 "sched_words", "backward_plans", "attention", "bhsd", "calls")

    def __init__(self, q, k, v, softmax_scale: float, causal: bool, causal_offset: int, bhsd: bool = False,
                 local_offset: int | None = None, softcap: float = 0.0, sink: bool = False):
        """q, k, v in the flash_attn layout (B, S, H, D), or with ``bhsd`` in torch's (B, H, S, D)
        (then out is made (B, Hq, Sq, D) with the flash_attn layout's strides: a transposed view of
        a contiguous (B, Sq, Hq, D) tensor, without a view op per call)."""
        # what the plan was made for, in the ops' convention (the autograd node's backward needs it)
        self.attention, self.bhsd = (softmax_scale, causal, causal_offset, local_offset, softcap), bhsd
        (B, Sq, Hq, D), q_stride = _bshd(q, bhsd)
        (_, Sk, Hk, _), k_stride = _bshd(k, bhsd)
        (_, _, _, Dv), v_stride = _bshd(v, bhsd)
        banded, causal_offset, local_offset = band(causal, causal_offset, local_offset)
        variant = fwd_variant(q, banded, Sk, softcap > 0, Dv, sink)
        self.dev = device_index(q)
        kernel = _loaded(variant, self.dev)   # first: a runtime failure surfaces before any device query
        num_m_blocks = -(-Sq // variant.block_m)
        tiles = num_m_blocks * Hq * B
        if tiles > MAX_GRID_X:
            raise ValueError(f"too many tiles for one launch: {tiles} > {MAX_GRID_X}")
        ctas = fwd_grid(variant, tiles, sm_count(self.dev))
        self.grid, self.device = (ctas, 1, 1), q.device
        out_stride = (Sq * Hq * Dv, Hq * Dv, Dv, 1)
        if bhsd:
            self.out_shape, self.out_stride = (B, Hq, Sq, Dv), (Sq * Hq * Dv, Dv, Hq * Dv, 1)
        else:
            self.out_shape, self.out_stride = (B, Sq, Hq, Dv), out_stride
        self.lse_shape = (B, Hq, Sq)
        blank = tma.BLANK_MAP
        template = FWD_PARAMS.pack(
            q=blank, k=blank, v=blank, o=blank, lse=0, tile_sched=0,
            seqlen_q=Sq, seqlen_k=Sk, num_heads_q=Hq, head_group=Hq // Hk,
            num_m_blocks=num_m_blocks, num_tiles=tiles, causal_offset=causal_offset, local_offset=local_offset,
            # banded: longest tiles first within groups of heads whose K and V fit in L2 (scheduler.cuh)
            lpt_heads=lpt_heads(Sk, D, Dv, q.element_size(), Hq // Hk, B * Hq, self.dev) if banded else 0,
            **score_scales(softmax_scale, softcap), sink=0, o_base=0,
            # out's rows, (B, Sq, Hq, Dv) in memory in either layout, for a kDirectO epilogue (params.cuh)
            o_row_bytes=out_stride[1] * q.element_size(), o_head_bytes=out_stride[2] * q.element_size(),
            # kVarlen only (fa3lite/hopper/varlen.py)
            cu_seqlens_q=0, cu_seqlens_k=0, seqused_q=0, seqused_k=0, q_base=0, k_base=0, v_base=0,
            seq_maps=0, q_row_bytes=0, k_row_bytes=0, v_row_bytes=0,
            o_member_bytes=0, lse_head_stride=0, lse_row_stride=0, lse_member_stride=0,
            # kSplit only (varlen.py): one split
            o_accum=0, lse_accum=0, num_splits=1, pack_group=1, row_group=1, q_tile_bytes=0, page_table=0,
            page_size=0, pages_per_seq=0, page_rows=0,
        )
        # What a call fills in leads the block: the q, k, v, o maps, then the lse, tile_sched, sink
        # and out addresses (FWD_PARAMS), packed by one struct per launch.
        self.prepared = launch.Prepared(kernel, self.grid, variant.threads, template, FWD_HEAD, self.dev)
        es = q.element_size()
        maps = [((B, Sq, Hq, D), q_stride, variant.block_m, None),
                ((B, Sk, Hk, D), k_stride, variant.block_n, None),
                ((B, Sk, Hk, Dv), v_stride, variant.block_n, None)]
        # O goes out through a map, unless the kernel stores it from registers (kDirectO): then the o
        # field stays blank and no call encodes a map for its new out
        if not variant.direct_o:
            maps.append(((B, Sq, Hq, Dv), out_stride, 64, 1))
        self.makers = tuple(
            tma.MapMaker(q.dtype, tma.bshd_geometry(shape, stride, es, rows, cols, variant.kernel_dim), self.dev)
            for shape, stride, rows, cols in maps)
        # A persistent causal grid claims tiles from a counter and hands them over through one word
        # per CTA, all zeroed every launch (with ctas == tiles the kernel takes the static path).
        dynamic = variant.dynamic_tiles and ctas < tiles
        self.sched_words = 1 + ctas if dynamic else 0
        # The backward launch plans of this forward's results (bwd.backward with fwd_plan).
        self.backward_plans: dict = {}
        # What the autograd nodes keep of a call with this plan, per (deterministic, backend):
        # made once, not per call (ops.planned_attention).
        self.calls: dict = {}

    def _out(self, q):
        """A fresh out with the plan's shape and strides (a method of its own: a test hands the kernel a
        view inside a guard band instead)."""
        return q.new_empty_strided(self.out_shape, self.out_stride)

    def __call__(self, q, k, v, sink=None):
        """(out, lse) of tensors with the plan's signature; ``sink`` when the plan was made for one."""
        lse = q.new_empty(self.lse_shape, dtype=torch.float32)
        return self._launch(q, k, v, sink, lse), lse

    def out(self, q, k, v, sink=None):
        """out alone, as __call__ makes it: the kernel stores no LSE (its address is 0), so a call
        that neither returns lse nor keeps it for a backward allocates one tensor, not two."""
        return self._launch(q, k, v, sink, None)

    def _launch(self, q, k, v, sink, lse):
        out = self._out(q)
        # the tile counter and hand-off slots: held until the launch is queued (freed earlier, the
        # memory could be handed out again -- at once without torch's caching allocator -- while
        # the kernel still uses it)
        sched = torch.zeros((self.sched_words,), dtype=torch.int32, device=self.device) if self.sched_words else None
        mq, mk, mv, *mo = self.makers
        stream = cdriver.stream(launch.stream_handle(self.dev))
        out_ptr = out.data_ptr()
        o_map = mo[0](out_ptr) if mo else tma.BLANK_MAP
        with on_device(self.dev):
            self.prepared.launch(stream, mq(q.data_ptr()), mk(k.data_ptr()), mv(v.data_ptr()), o_map,
                                 0 if lse is None else lse.data_ptr(), 0 if sched is None else sched.data_ptr(),
                                 0 if sink is None else sink.data_ptr(), out_ptr)
        return out


FWD_HEAD = FWD_PARAMS.head("q", "k", "v", "o", "lse", "tile_sched", "sink", "o_base")   # what a call fills in


def fwd_grid(variant: FwdVariant, tiles: int, sm_count: int) -> int:
    """CTAs to launch for `tiles` forward tiles: one per tile, or for a persistent variant a grid of
    one per SM. Any tile may see no key (a band, a window): a persistent fixed-length CTA never stages
    O in its Q buffer (sO, or kDirectO), so such a tile takes no part in the Q hand-off."""
    if not variant.tile.persistent or tiles <= sm_count:
        return tiles
    return sm_count


def lpt_heads(seqlen_k: int, d: int, dv: int, elem_bytes: int, group: int, pairs: int, device) -> int:
    """lpt_heads of a forward launch from sizes: ``pairs`` (query head, batch) slots reading K and V
    rows of ``seqlen_k`` keys (varlen: the longest sequence's, an upper bound), d / dv elements each;
    a K/V head's rows serve its ``group`` query heads, which are adjacent."""
    return lpt_group(seqlen_k * (d + dv) * elem_bytes // group, pairs, device)


_plans: dict[tuple, _FwdPlan] = {}


def forward(q, k, v, softmax_scale: float, causal: bool, causal_offset: int, local_offset: int | None = None,
            softcap: float = 0.0, sink=None):
    """Attention forward on the Hopper kernel. Returns (out, lse); see the module docstring."""
    return _forward(q, k, v, softmax_scale, causal, causal_offset, False, local_offset, softcap, sink)


def forward_bhsd(query, key, value, softmax_scale: float, causal: bool):
    """forward() on torch's layout: query (B, Hq, Sq, D), key/value (B, Hk, Sk, D), the mask
    top-left aligned (torch's is_causal). Returns out (B, Hq, Sq, D), a transposed view's strides of
    a contiguous (B, Sq, Hq, D) buffer, and lse (B, Hq, Sq)."""
    return _forward(query, key, value, softmax_scale, causal, 0, True, None, 0.0, None)


def forward_plan(q, k, v, softmax_scale: float, causal: bool, causal_offset: int, bhsd: bool = False,
                 local_offset: int | None = None, softcap: float = 0.0, sink=None):
    """The launch plan an earlier forward() (bhsd: forward_bhsd()) with this signature built, or None.
    Calling it with tensors of that signature is that forward: plan(q, k, v[, sink]) -> (out, lse);
    plan.out(q, k, v[, sink]) -> out makes no lse."""
    return _plans.get(_plan_key(q, k, v, softmax_scale, causal, causal_offset, bhsd, local_offset, softcap,
                                sink is not None))


def _plan_key(q, k, v, softmax_scale, causal, causal_offset, bhsd, local_offset, softcap, has_sink):
    return (q.shape, q.stride(), k.shape, k.stride(), v.shape, v.stride(), q.dtype, q.device,
            band(causal, causal_offset, local_offset), softmax_scale, softcap, has_sink, bhsd, debug_build())


def _forward(q, k, v, softmax_scale, causal, causal_offset, bhsd, local_offset, softcap, sink):
    key = _plan_key(q, k, v, softmax_scale, causal, causal_offset, bhsd, local_offset, softcap, sink is not None)
    plan = _plans.get(key)
    if plan is None:
        (B, Sq, Hq, D), _ = _bshd(q, bhsd)
        if B * Sq * Hq * D == 0 or _bshd(k, bhsd)[0][1] == 0:
            out, lse = _forward_without_keys(B, Sq, Hq, v.shape[-1], q, sink)
            return (out.transpose(1, 2) if bhsd else out), lse
        if not softmax_scale > 0:
            raise ValueError(f"softmax_scale must be > 0 for the Hopper kernels, got {softmax_scale}")
        plan = _FwdPlan(q, k, v, softmax_scale, causal, causal_offset, bhsd, local_offset, softcap,
                        sink is not None)
        if len(_plans) >= PLAN_LIMIT:
            _plans.clear()
        _plans[key] = plan
    return plan(q, k, v, sink)


def _bshd(t, bhsd: bool):
    """(shape, strides) of ``t`` in the flash_attn order (B, S, H, D)."""
    shape, stride = t.shape, t.stride()
    if bhsd:
        return (shape[0], shape[2], shape[1], shape[3]), (stride[0], stride[2], stride[1], stride[3])
    return tuple(shape), stride


def _forward_without_keys(B, Sq, Hq, D, q, sink=None):
    """(out (B, Sq, Hq, D), lse) of an empty call, or of Sk == 0 (every row fully masked: out 0,
    lse -inf, or the sink's logit where there is one)."""
    out = torch.zeros((B, Sq, Hq, D), dtype=q.dtype, device=q.device)
    if sink is not None:
        return out, sink.float().view(1, Hq, 1).expand(B, Hq, Sq).contiguous()
    lse = torch.full((B, Hq, Sq), -math.inf, dtype=torch.float32, device=q.device)
    return out, lse
