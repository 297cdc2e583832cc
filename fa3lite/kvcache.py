"""flash_attn_with_kvcache: attention of new query tokens against a cached K/V (inference).

The call, in FlashAttention's order of events:
1. new rows k, v (B, S_new, Hk, D) are written into the cache in place at positions
   cache_seqlens[b] .. cache_seqlens[b] + S_new - 1 of cache row cache_batch_idx[b] (or of the pages
   page_table[b] names), rotated first when rotary_cos/sin are given;
2. queries attend to keys cache_leftpad[b] .. cache_seqlens[b] + S_new - 1 of their cache row, causal
   and windows aligned bottom-right (the last query row is the newest token).

Kernels: the sequences are handed to the varlen path (ops.varlen_attention) as one packed batch:
query rows (B * Sq, Hq, D); keys read in place from the cache viewed as (B_cache * S_cache, Hk, D),
sequence b starting at row cache_batch_idx[b] * S_cache + cache_leftpad[b] and using seqused_k[b]
rows. A paged cache is read in place through its page table by the split kernel where its page size
tiles the kernel's copies (_pages_in_place), else first gathered per batch row into a contiguous
(B, pages * page_size, Hk, D) copy. New K/V rows are written by torch's ops on a signature's first
call and by the append kernel (fa3lite/hopper/append.py: one launch for K and V) on its repeats. With GQA the query heads that share a K/V head are packed into the rows of one head
(pack_gqa; rows (position, head in group), each keeping its position's causal or window mask), so
each K/V row is read once per K/V head, not once per query head; a decode step's launch plan reads
those rows in place and writes out / lse in the step's own layout (step_rows: one strided map over
q), a first call or a layout it cannot take packs q into a copy and unpacks out after. Where a sequence's query rows fit
one 64-row tile (a decode step), the split-KV kernel runs: each tile's keys shared over num_splits
CTAs (0: chosen from the shape and SM count, fa3lite/hopper/splits.py), their partial results merged
by a combine kernel (launched as a dependent of the split kernel, so it starts while that one ends).
Nothing reads device values on the host, so the call can be captured in a CUDA graph and traced by
torch.compile. A repeated call signature (fa3lite.callkey) skips the checks and
goes straight to its launch plan.
"""
from __future__ import annotations

import dataclasses
import typing

import torch

from . import callkey, checks, ops, rotary
from .errors import KernelUnavailable
from .api import window_mask

_INDEX_DTYPES = (torch.int32, torch.int64)
DECODE_ROWS = 64    # query rows of the split kernel's tile (variants.SPLIT_BLOCK_M, not imported: see step_rows)
_PAGE_TABLE_ARG = 10   # page_table's position among the call's tensors (flash_attn_with_kvcache's order)


def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None, rotary_sin=None,
                            cache_seqlens=None, cache_batch_idx=None, cache_leftpad=None, page_table=None,
                            softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                            rotary_interleaved=True, num_splits=0, pack_gqa=None, return_softmax_lse=False,
                            backend="auto"):
    """Attention of q against a K/V cache, appending k/v to the cache first (no autograd).

    Args:
        q: (B, Sq, Hq, D); Hq a multiple of Hk.
        k_cache, v_cache: (B_cache, S_cache, Hk, D[v]), or with page_table (num_pages, page_size,
            Hk, D[v]); the leading two dims must be contiguous with each other (the cache is read in
            place). Written in place when k, v are given.
        k, v: None, or the new rows (B, S_new, Hk, D[v]) in the cache's dtype.
        rotary_cos, rotary_sin: None, or (seqlen_ro, rotary_dim / 2) tables (rotary_dim even, <= D):
            the new k rows are rotated at their logical positions cache_seqlens - cache_leftpad + i,
            the queries at the same positions when causal or windowed, else all at position
            cache_seqlens - cache_leftpad. Needs k and v. Positions past seqlen_ro are clamped.
        cache_seqlens: None (every cache row full: S_cache, or pages * page_size; not with k, v), an
            int, or int32 (B,): where each sequence's cache ends before the append (the append's first
            position).
            cache_seqlens + S_new must not exceed the cache's capacity: checked on the host for an int;
            for a tensor (not read on the host) positions past the end are clamped to the last row.
        cache_batch_idx: None or int32/int64 (B,): the cache row of each batch row (not with page_table).
        cache_leftpad: None or int32 (B,): the first cache position each sequence uses (not with
            page_table).
        page_table: None or int32 (B, pages): the pages of each batch row, in order.
        softmax_scale, causal, window_size, softcap, backend: as in flash_attn_func.
        rotary_interleaved: pairs (2i, 2i + 1) when True (GPT-J), (i, i + rotary_dim / 2) when False.
        num_splits: 0 (chosen from the shape) or the number of CTAs that share one query tile's keys
            (at most 128; 1: no split). The split kernel runs where a sequence's (packed) query rows fit
            one 64-row tile, or with num_splits > 1.
        pack_gqa: None or True packs the query heads of each K/V head into one head's rows (with
            GQA; the result is the same); False never.
        return_softmax_lse: also return lse (B, Hq, Sq) float32, natural log.

    Returns:
        out (B, Sq, Hq, Dv) in q's dtype, or (out, lse).

    Raises:
        fa3lite.InputError listing every invalid argument.
    """
    args = (q, k_cache, v_cache, k, v, rotary_cos, rotary_sin, cache_seqlens, cache_batch_idx, cache_leftpad,
            page_table)
    key = callkey.kvcache_key(*args, softmax_scale, causal, window_size, softcap, rotary_interleaved, num_splits,
                              pack_gqa, return_softmax_lse, backend)
    found = callkey.find(key)
    if found is callkey.MISSING:
        problems = _problems(q, k_cache, v_cache, k, v, rotary_cos, rotary_sin, cache_seqlens, cache_batch_idx,
                             cache_leftpad, page_table, num_splits, pack_gqa)
        problems += checks.scale_problems("softmax_scale", softmax_scale)
        problems += checks.flag_problems(causal=causal, rotary_interleaved=rotary_interleaved,
                                         return_softmax_lse=return_softmax_lse)
        problems += checks.backend_problems(backend) + checks.window_problems(window_size)
        problems += checks.softcap_problems(softcap)
        checks.raise_if_any(problems, "flash_attn_with_kvcache")
    elif found is not None:   # a signature that ran on the kernels: straight to its launch plan
        with torch.no_grad():
            return found(*args)
    layout = _Layout.of(q, k_cache, page_table, softmax_scale, causal, window_size, softcap, rotary_interleaved,
                        num_splits, pack_gqa, return_softmax_lse, rotated=k is not None and rotary_cos is not None)
    with torch.no_grad():
        if _pages_in_place(layout, q, k_cache, v_cache, page_table, backend):
            paged = dataclasses.replace(layout, pages_in_place=True)
            rows = paged.inputs(*args, alias=True)
            try:
                kernel = _kernel_plan(paged, rows.q, rows.k, rows.v, rows.aliased, page_table)
            except KernelUnavailable:   # (backend "auto") gather the pages instead; the append repeats
                if backend == "fa3lite":   # the same writes, and the rotation starts from q, k again
                    raise
            else:
                out, lse = kernel(rows.q, rows.k, rows.v, rows.cu_q, rows.cu_k, None, rows.used_k, None,
                                  page_table, need_lse=layout.return_lse)
                callkey.remember(key)
                if key is not None:
                    callkey.attach(key, _Plan(paged, kernel))
                return paged.outputs(out, lse, rows.aliased)
        rows = layout.inputs(*args)
        band, causal_offset, local_offset = layout.mask
        out, lse = ops.varlen_attention(rows.q, rows.k, rows.v, rows.cu_q, rows.cu_k, None, rows.used_k, layout.rows,
                                        layout.rows_per_seq, layout.scale, band, causal_offset, local_offset,
                                        layout.softcap, None, False, backend, layout.splits, layout.pack_group)
        result = layout.outputs(out, lse, False)
        callkey.remember(key)
        if key is not None and ops.varlen_kernels_take(rows.q, rows.k, rows.v, layout.scale, layout.softcap, backend):
            if layout.grouped is not None:   # the repeats read the step's queries in place: a plan for it
                kernel = _kernel_plan(layout, q.new_empty(q.shape) if layout.rotated else q, rows.k, rows.v, True)
            else:
                kernel = _kernel_plan(layout, rows.q, rows.k, rows.v, False)
            callkey.attach(key, _Plan(layout, kernel))
    return result


def _kernel_plan(layout: "_Layout", qrows, k, v, aliased: bool, page_table=None):
    """The varlen kernel's launch plan for this layout and the call's (q rows, k rows, v rows) from
    layout.inputs (with pages in place: the pool as rows, and the page table; aliased: q itself, read
    as layout.grouped says)."""
    band, causal_offset, local_offset = layout.mask
    paged = (layout.rows_per_seq // page_table.shape[1], page_table.shape[1]) if layout.pages_in_place else None
    return ops.varlen_forward_plan(qrows, k, v, layout.b, layout.rows, layout.scale, band, causal_offset,
                                   local_offset, layout.softcap, layout.rows_per_seq, layout.splits,
                                   layout.pack_group, paged, layout.grouped if aliased else None)


def step_rows(q: torch.Tensor, group: int) -> "GroupedRows | None":
    """How the split kernel reads a step's queries q (B, Sq, Hq, D) in place as packed-GQA rows (position,
    query head of a group) -- one strided map over q, no copy (variants.GroupedRows) -- or None where it
    cannot: positions not one stride apart (a (B, Sq) pair strided unevenly), the last dim not
    contiguous, an address or used stride not a multiple of 16 bytes (TMA's rule), or groups a tile
    holds neither whole nor all at once (variants.split_box_groups). Run when a call signature's layout
    is decided, not per step."""
    from .variants import GroupedRows, split_box_groups   # here: importing fa3lite loads no kernel code

    b, sq, hq, d = q.shape
    box = split_box_groups(sq, group)
    if not box or q.stride(3) != 1 or q.data_ptr() % 16:
        return None
    if sq == 1:
        position = q.stride(0)
    elif b == 1 or q.stride(0) == sq * q.stride(1):
        position = q.stride(1)
    else:
        return None
    strides = (position, q.stride(2), group * q.stride(2))
    es = q.element_size()
    if any(n > 1 and (s <= 0 or s * es % 16) for n, s in zip((b * sq, group, hq // group), strides)):
        return None
    return GroupedRows(group, strides, box)


def _pages_in_place(layout: "_Layout", q, k_cache, v_cache, page_table, backend: str) -> bool:
    """Whether the split kernel reads this paged cache in place (else the pages are gathered): a
    decode-sized layout (the split kernel), a contiguous page table, a page size the kernel's copies
    can tile (hopper.page_rows), and inputs the kernels take (never while torch.compile traces)."""
    if not layout.paged or layout.splits < 0 or not page_table.is_contiguous():
        return False
    heads = layout.hq // layout.pack_group
    probe = q.new_empty((layout.b * layout.rows, heads, layout.d))
    pool = [c.view(-1, *c.shape[2:]) for c in (k_cache, v_cache)]
    return (ops.varlen_kernels_take(probe, pool[0], pool[1], layout.scale, layout.softcap, backend)
            and ops.varlen_page_rows(k_cache.shape[1], layout.d) > 0)


@dataclasses.dataclass(frozen=True)
class _Layout:
    """What a call signature decides, once: shapes, the pack-GQA choice, the mask, the split count
    handed to the varlen path. inputs() and outputs() do a call's per-tensor work around the kernel."""

    b: int
    sq: int
    hq: int
    d: int
    group: int
    rows_per_seq: int       # key rows each sequence may use: S_cache, or pages * page_size
    paged: bool
    packs: bool             # the group's query heads run as one K/V head's rows (_packs)
    rows: int               # query rows per sequence as the kernel sees them
    splits: int             # the varlen path's num_splits (_kernel_splits)
    scale: float
    mask: tuple             # (banded, causal_offset, local_offset) relative to each sequence's diagonal
    softcap: float
    causal: bool
    windowed: bool
    interleaved: bool
    return_lse: bool
    rotated: bool           # q is rotated first (rotary tables and new rows): a new contiguous tensor
    grouped: "GroupedRows | None"   # the kernel plans read q and write out / lse in the step's layout
                                    # (step_rows), or None: they read a packed copy
    pages_in_place: bool = False   # the kernel reads the page pool (else the pages are gathered)

    @classmethod
    def of(cls, q, k_cache, page_table, softmax_scale, causal, window_size, softcap, interleaved, num_splits,
           pack_gqa, return_lse, rotated: bool) -> "_Layout":
        b, sq, hq, d = q.shape
        paged = page_table is not None
        group = hq // k_cache.shape[2]
        packs = _packs(pack_gqa, group)
        rows = group * sq if packs else sq
        splits = _kernel_splits(num_splits, rows)
        # packed heads on the split kernel read in place (step_rows; rotary's output is contiguous)
        grouped = step_rows(q.new_empty(q.shape) if rotated else q, group) if packs and splits >= 0 else None
        return cls(b, sq, hq, d, group, page_table.shape[1] * k_cache.shape[1] if paged else k_cache.shape[1],
                   paged, packs, rows, splits,
                   d ** -0.5 if softmax_scale is None else float(softmax_scale), window_mask(0, 0, causal, window_size),
                   float(softcap), causal,
                   tuple(window_size) != (-1, -1), interleaved, return_lse, rotated, grouped)

    @property
    def pack_group(self) -> int:
        return self.group if self.packs else 1

    def inputs(self, q, k_cache, v_cache, k, v, cos, sin, cache_seqlens, batch_idx, leftpad, page_table,
               appender=None, alias: bool = False) -> "_Rows":
        """Rotary and the append (in place), then the varlen path's inputs (_Rows). ``appender``: None,
        or a callable that writes k and v into the caches (the append kernel's launch, _Plan), and with a
        tensor cache_seqlens and no leftpad the key lengths after the append into a fresh int32 (B,)
        (no torch add per step), and returns whether it did; otherwise torch's ops do (_append). Only a
        kernel plan's call passes one, and its plan reads the caches' addresses only: the K and V rows
        are then the caches themselves, not views of them as rows. ``alias``: q itself where the layout
        reads it in place (the kernel plans: step_rows), else packed into a copy (the general path)."""
        b, sq, dev = self.b, self.sq, q.device
        s_new = 0 if k is None else k.shape[1]
        used_k = None   # the key lengths after the append, where the append kernel writes them
        if k is not None:
            if cos is not None:
                end = _ends(cache_seqlens, b, self.rows_per_seq, dev).to(torch.int64)
                logical = end if leftpad is None else end - leftpad.to(torch.int64)   # the first new row's position
                k = rotary.apply_rotary(k, cos, sin, _positions(logical, s_new, cos.shape[0]), self.interleaved)
                # flash_attn's rule: queries of a causal or windowed call are the appended tokens
                # themselves; otherwise every query sits at the append position.
                same = not (self.causal or self.windowed)
                q = rotary.apply_rotary(q, cos, sin, _positions(logical, sq, cos.shape[0], same), self.interleaved)
            if appender is not None and leftpad is None and isinstance(cache_seqlens, torch.Tensor):
                used_k = cache_seqlens.new_empty((b,))
            if appender is None or not appender(k_cache, v_cache, k, v, cache_seqlens, batch_idx, page_table, used_k):
                used_k = None
                end = _ends(cache_seqlens, b, self.rows_per_seq, dev).to(torch.int64)
                row = _constant(("arange", b, 1), dev) if batch_idx is None else batch_idx.to(torch.int64)
                for cache, new in ((k_cache, k), (v_cache, v)):
                    _append(cache, new, end, row, page_table)
        gathered = self.paged and not self.pages_in_place
        if gathered:
            keys = [_gathered(c, page_table) for c in (k_cache, v_cache)]
        elif appender is not None:   # a kernel plan's call: it reads the caches' addresses only, no view op
            keys = [k_cache, v_cache]
        else:
            keys = [c.view(-1, *c.shape[2:]) for c in (k_cache, v_cache)]
        total_rows = keys[0].shape[0] if gathered else k_cache.shape[0] * k_cache.shape[1]
        cu_k, used_k = _key_rows(cache_seqlens, s_new, batch_idx if not self.paged else None, leftpad, b,
                                 self.rows_per_seq, total_rows, dev, used_k)
        if self.pages_in_place:   # the kernel finds each sequence's rows through the page table
            cu_k = _constant(("full", b + 1, 0), dev, torch.int32)
        cu_q = _constant(("arange", b + 1, self.rows), dev, torch.int32)
        if alias and self.grouped is not None:   # q itself: the plan reads its rows in place (step_rows)
            return _Rows(q, keys[0], keys[1], cu_q, cu_k, used_k, True)
        if self.packs:
            # query head h reads K/V head h // group; a position's group of heads on adjacent rows:
            # (B, Sq, Hk, group, D) -> (B, Sq, group, Hk, D), rows (position, g) of each sequence
            hk = self.hq // self.group
            qrows = q.view(b, sq, hk, self.group, self.d).transpose(2, 3).reshape(b * self.rows, hk, self.d)
        else:
            qrows = q.reshape(b * sq, self.hq, self.d)
        return _Rows(qrows, keys[0], keys[1], cu_q, cu_k, used_k, False)

    def outputs(self, out, lse, aliased: bool):
        """out (B, Sq, Hq, Dv) (and lse (B, Hq, Sq)) from the varlen path's (B * rows, heads, Dv) and
        (heads, B * rows), or (aliased) from a plan that read q in place: (B, Sq, Hq, Dv) and (B, Sq, Hq)."""
        b, sq, hq, dv = self.b, self.sq, self.hq, out.shape[-1]
        if aliased:
            if not self.return_lse:
                return out
            lse = lse.transpose(1, 2)   # (B, Hq, 1) is contiguous as it is; more positions are copied
            return out, lse if sq == 1 else lse.contiguous()
        if self.packs:
            hk = hq // self.group
            out = out.view(b, sq, self.group, hk, dv).transpose(2, 3).reshape(b, sq, hq, dv)
            if not self.return_lse:
                return out
            return out, lse.view(hk, b, sq, self.group).permute(1, 0, 3, 2).reshape(b, hq, sq)
        out = out.view(b, sq, hq, dv)
        return (out, lse.view(hq, b, sq).permute(1, 0, 2).contiguous()) if self.return_lse else out


class _Plan:
    """A signature that ran on the kernels: its layout and the varlen kernel's launch plan, called
    with the same arguments as flash_attn_with_kvcache's tensors (checks and dispatch skipped: the
    signature's key, fa3lite.callkey, covers everything they read). New K/V rows go into the cache
    through the append kernel where it takes them (its plan made on the first call with rows to
    append; False where it cannot), else through torch's ops."""

    def __init__(self, layout: _Layout, kernel):
        self.layout, self.kernel, self.appends = layout, kernel, None

    def _append(self, k_cache, v_cache, k, v, cache_seqlens, batch_idx, page_table, used_k) -> bool:
        """The append kernel's launch (its plan made on the first call), writing ``used_k`` too when it is
        a tensor; False where torch's ops must append instead."""
        if self.appends is None:
            if k.is_cuda and torch.cuda.is_current_stream_capturing():
                return False   # no module load inside a CUDA graph capture: torch's ops this time
            self.appends = ops.kv_append_plan(k_cache, v_cache, k, v, cache_seqlens, batch_idx, page_table) or False
        if self.appends:
            self.appends(k_cache, v_cache, k, v, cache_seqlens, batch_idx, page_table, used_k)
        return bool(self.appends)

    def __call__(self, *args):
        rows = self.layout.inputs(*args, appender=self._append, alias=True)
        page_table = args[_PAGE_TABLE_ARG] if self.layout.pages_in_place else None
        out, lse = self.kernel(rows.q, rows.k, rows.v, rows.cu_q, rows.cu_k, None, rows.used_k, None, page_table,
                               need_lse=self.layout.return_lse)
        return self.layout.outputs(out, lse, rows.aliased)


class _Rows(typing.NamedTuple):
    """One call's inputs to the varlen path (_Layout.inputs): q rows (packed (B * rows, heads, D), or
    with ``aliased`` the step's q itself, read in place: step_rows), the K and V rows (the cache viewed
    as rows, the gathered pages, or the page pool; in a kernel plan's call the caches as they are),
    cu_seqlens_q / cu_seqlens_k int32 (B + 1,) and seqused_k int32 (B,)."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    cu_q: torch.Tensor
    cu_k: torch.Tensor
    used_k: torch.Tensor
    aliased: bool


def _ends(cache_seqlens, b: int, rows_per_seq: int, dev) -> torch.Tensor:
    """(B,) where each sequence's cache ends before the append: the tensor itself, or a constant."""
    if isinstance(cache_seqlens, torch.Tensor):
        return cache_seqlens
    return _constant(("full", b, rows_per_seq if cache_seqlens is None else cache_seqlens), dev, torch.int32)


def _key_rows(cache_seqlens, s_new: int, batch_idx, leftpad, b: int, rows_per_seq: int, total_rows: int, dev,
              used_k=None):
    """(cu_k (B + 1,), used_k (B,)) int32 for the varlen path: sequence b's keys are rows
    cu_k[b] .. cu_k[b] + used_k[b] - 1 of the cache viewed as rows (paged: of the gathered copy, whose
    row b is batch row b). cu_k[B] only completes the shape (seqused_k gives every length). The
    kernels clamp both to the cache's rows, so no value of a device tensor reads out of bounds; what
    is not a device tensor comes from a per-shape constant, so a plain decode step (cache_seqlens a
    tensor, nothing appended, no leftpad) costs no extra kernel launch. ``used_k``: the lengths the
    append kernel wrote (cache_seqlens + s_new, no leftpad), or None. Every input is int32 (the
    checks), so are the results."""
    if batch_idx is None and leftpad is None:
        cu_k = _constant(("arange", b + 1, rows_per_seq), dev, torch.int32)
    else:
        row = torch.arange(b, device=dev) if batch_idx is None else batch_idx.to(torch.int64)
        first = row * rows_per_seq + (0 if leftpad is None else leftpad)
        cu_k = torch.cat((first, first.new_full((1,), total_rows))).to(torch.int32)
    if used_k is not None:
        return cu_k, used_k
    if isinstance(cache_seqlens, torch.Tensor):
        used_k = cache_seqlens if s_new == 0 else cache_seqlens + s_new
    else:
        used_k = _constant(("full", b, (rows_per_seq if cache_seqlens is None else cache_seqlens) + s_new), dev,
                           torch.int32)
    if leftpad is not None:
        used_k = (used_k - leftpad).clamp(min=0)
    return cu_k, used_k


_constants: dict[tuple, torch.Tensor] = {}
_CONSTANTS_LIMIT = 256
_captured: dict[tuple, torch.Tensor] = {}   # constants a CUDA graph captured: kept for its replays


def _constant(key: tuple, dev, dtype=torch.int64) -> torch.Tensor:
    """A small index tensor that depends only on the shapes, made once per (key, device, dtype):
    ("arange", n, step) is 0, step, ..., (n - 1) * step; ("full", n, value) n copies of value. Never
    written by anyone. Made fresh while torch.compile traces (no global state in the graph). While a
    CUDA graph captures, one made before (the warm-up call a capture follows) is used and kept for
    good -- the graph reads its memory on every replay -- so a replay runs no kernel to make it; a new
    one is made inside the capture (its memory then belongs to that graph's pool) and not kept."""
    kind, n, x = key
    make = (lambda: torch.arange(0, n * x, x, dtype=dtype, device=dev)[:n]) if kind == "arange" else \
        (lambda: torch.full((n,), x, dtype=dtype, device=dev))
    if torch.compiler.is_compiling():
        return make()
    full_key = (key, dev, dtype)
    if dev.type == "cuda" and torch.cuda.is_current_stream_capturing():
        t = _constants.get(full_key, _captured.get(full_key))
        if t is None:
            return make()
        _captured[full_key] = t
        return t
    t = _constants.get(full_key)
    if t is None:
        if len(_constants) >= _CONSTANTS_LIMIT:
            _constants.clear()
        t = _constants[full_key] = make()
    return t


def _kernel_splits(num_splits: int, rows: int) -> int:
    """The varlen path's num_splits for `rows` query rows per sequence: the split-KV (decode) kernel,
    64-row tiles, where a sequence's rows fit one tile or the caller asks for splits (0: the count
    chosen from the shape, fa3lite/hopper/splits.py); else -1, the dense kernel (a prefill's rows fill
    its 128-row tiles)."""
    return num_splits if num_splits > 1 or rows <= DECODE_ROWS else -1


def _packs(pack_gqa, group: int) -> bool:
    """Whether the query heads that share a K/V head run as rows of one head (pack_gqa None or True;
    False never packs): with GQA. Each packed row keeps its query position's mask (the kernels'
    pack_group, cuda_src/attention/mask.cuh; fallback.forward_varlen unpacks), so any mask packs."""
    return pack_gqa is not False and group > 1


def _positions(first: torch.Tensor, count: int, limit: int, same: bool = False) -> torch.Tensor:
    """(B, count) int64 positions first[b] + i (first[b] in every column when `same`), clamped to
    [0, limit - 1] so that a short table is never indexed out of bounds."""
    steps = torch.arange(count, device=first.device)
    pos = first[:, None] + (torch.zeros_like(steps) if same else steps)[None, :]
    return pos.clamp(0, limit - 1)


def _append(cache: torch.Tensor, new: torch.Tensor, end: torch.Tensor, row: torch.Tensor, page_table) -> None:
    """Write new (B, S_new, H, D) into cache at positions end[b] + i of sequence b, in place: cache
    row row[b] (B_cache, S_cache, H, D), or page page_table[b, pos // page_size] of a paged cache
    (num_pages, page_size, H, D). Positions past the capacity are clamped to the last one (a
    tensor cache_seqlens is not read on the host, so this is what keeps every write in bounds)."""
    rows_per_unit = cache.shape[1]
    capacity = page_table.shape[1] * rows_per_unit if page_table is not None else rows_per_unit
    pos = _positions(end, new.shape[1], capacity)
    if page_table is None:
        flat = row[:, None] * rows_per_unit + pos
    else:
        page = page_table.to(torch.int64).gather(1, pos // rows_per_unit)
        flat = page * rows_per_unit + pos % rows_per_unit
    cache.view(-1, *cache.shape[2:]).index_copy_(0, flat.reshape(-1), new.reshape(-1, *new.shape[2:]))


def _gathered(cache: torch.Tensor, page_table: torch.Tensor) -> torch.Tensor:
    """The pages of each batch row in order: (B * pages * page_size, H, D), a copy."""
    return cache[page_table.to(torch.int64)].flatten(0, 2)


def _problems(q, k_cache, v_cache, k, v, cos, sin, cache_seqlens, batch_idx, leftpad, page_table, num_splits,
              pack_gqa) -> list[str]:
    """Every problem with the tensors and ints of a call (none of their values is read)."""
    problems = []
    tensors = {"q": q, "k_cache": k_cache, "v_cache": v_cache}
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            problems.append(f"{name}: expected a torch.Tensor, got {checks.type_name(t)}")
        elif t.dim() != 4:
            problems.append(f"{name}.dim(): expected 4 dimensions, got {t.dim()} with shape {tuple(t.shape)}")
    if problems:
        return problems
    b, sq, hq, d = q.shape
    for name, t in (("k_cache", k_cache), ("v_cache", v_cache)):
        if t.dtype != q.dtype or t.device != q.device:
            problems.append(f"{name}: expected q's dtype and device ({q.dtype}, {q.device}), got {t.dtype}, {t.device}")
        if t.shape[1] > 0 and t.stride(0) != t.shape[1] * t.stride(1):
            problems.append(f"{name}.stride(0): expected shape[1] * stride(1) = {t.shape[1] * t.stride(1)} (the "
                            f"cache is read in place as rows), got {t.stride(0)}")
    if q.dtype not in checks.API_DTYPES:
        problems.append(f"q.dtype: expected one of {checks.API_DTYPES}, got {q.dtype}")
    if k_cache.shape[:3] != v_cache.shape[:3]:
        problems.append(f"v_cache.shape[:3]: expected k_cache's {tuple(k_cache.shape[:3])}, got {tuple(v_cache.shape[:3])}")
    if k_cache.shape[3] != d:
        problems.append(f"k_cache.shape[3] (head dim): expected q's {d}, got {k_cache.shape[3]}")
    hk = k_cache.shape[2]
    if hk == 0 or hq % hk:
        problems.append(f"k_cache.shape[2] (nheads): expected a divisor of q's {hq} heads, got {hk}")
    paged = page_table is not None
    if paged:
        if not isinstance(page_table, torch.Tensor) or page_table.dtype != torch.int32 or page_table.dim() != 2 \
                or page_table.shape[0] != b or page_table.device != q.device:
            problems.append(f"page_table: expected an int32 tensor of shape (batch, pages) = ({b}, pages) on "
                            f"{q.device}, got {_describe(page_table)}")
        for name, t in (("cache_batch_idx", batch_idx), ("cache_leftpad", leftpad)):
            if t is not None:
                problems.append(f"{name}: expected None with page_table (pages already name each row's cache)")
    elif k_cache.shape[0] == 0 or k_cache.shape[1] == 0:
        problems.append(f"k_cache.shape: expected a cache of at least one row, got {tuple(k_cache.shape)}")
    for name, t, dtypes in (("cache_batch_idx", batch_idx, _INDEX_DTYPES), ("cache_leftpad", leftpad, (torch.int32,))):
        if t is not None and (not isinstance(t, torch.Tensor) or t.dtype not in dtypes or t.shape != (b,)
                              or t.device != q.device):
            problems.append(f"{name}: expected None or a {'/'.join(str(x) for x in dtypes)} tensor of shape ({b},) "
                            f"on {q.device}, got {_describe(t)}")
    capacity = (page_table.shape[1] * k_cache.shape[1] if paged and isinstance(page_table, torch.Tensor)
                and page_table.dim() == 2 else k_cache.shape[1])
    s_new = 0
    if (k is None) != (v is None):
        problems.append(f"k, v: expected both or neither, got k {_describe(k)}, v {_describe(v)}")
    elif k is not None:
        for name, t, cache in (("k", k, k_cache), ("v", v, v_cache)):
            if not isinstance(t, torch.Tensor) or t.dim() != 4 or t.shape[0] != b or t.shape[2:] != cache.shape[2:] \
                    or t.dtype != cache.dtype or t.device != q.device:
                problems.append(f"{name}: expected a {cache.dtype} tensor of shape (batch, new rows, nheads, head dim) "
                                f"= ({b}, S_new, {hk}, {cache.shape[3]}) on {q.device}, got {_describe(t)}")
        if isinstance(k, torch.Tensor) and isinstance(v, torch.Tensor) and k.dim() == v.dim() == 4 \
                and k.shape[1] != v.shape[1]:
            problems.append(f"v.shape[1]: expected k's {k.shape[1]} new rows, got {v.shape[1]}")
        s_new = k.shape[1] if isinstance(k, torch.Tensor) and k.dim() == 4 else 0
    if cache_seqlens is None and k is not None:
        problems.append("cache_seqlens: expected an int or an int32 tensor (batch,) with k and v (where to append), "
                        "got None")
    if cache_seqlens is not None:
        if isinstance(cache_seqlens, bool) or not isinstance(cache_seqlens, (int, torch.Tensor)):
            problems.append(f"cache_seqlens: expected None, an int or an int32 tensor (batch,), got "
                            f"{checks.type_name(cache_seqlens)}")
        elif isinstance(cache_seqlens, int):
            if not 0 <= cache_seqlens <= capacity - s_new:
                problems.append(f"cache_seqlens: expected an int in [0, {capacity - s_new}] (the cache holds "
                                f"{capacity} rows and {s_new} are appended), got {cache_seqlens}")
        elif cache_seqlens.dtype != torch.int32 or cache_seqlens.shape != (b,) or cache_seqlens.device != q.device:
            problems.append(f"cache_seqlens: expected an int32 tensor of shape ({b},) on {q.device}, got "
                            f"{_describe(cache_seqlens)}")
    if (cos is None) != (sin is None):
        problems.append(f"rotary_cos, rotary_sin: expected both or neither, got {_describe(cos)}, {_describe(sin)}")
    elif cos is not None:
        if k is None:
            problems.append("rotary_cos: expected k and v with it (the rotation applies to the appended rows)")
        for name, t in (("rotary_cos", cos), ("rotary_sin", sin)):
            if not isinstance(t, torch.Tensor) or t.dim() != 2 or t.shape != getattr(cos, "shape", None) \
                    or not t.is_floating_point() or t.device != q.device or t.shape[0] == 0 \
                    or not 0 < 2 * t.shape[1] <= d:
                problems.append(f"{name}: expected a floating tensor (seqlen_ro, rotary_dim / 2) on {q.device} with "
                                f"0 < rotary_dim <= {d}, the same shape for cos and sin, got {_describe(t)}")
    if isinstance(num_splits, bool) or not isinstance(num_splits, int) or num_splits < 0:
        problems.append(f"num_splits: expected an int >= 0 (0: chosen from the shape), got {num_splits!r}")
    if pack_gqa is not None and not isinstance(pack_gqa, bool):
        problems.append(f"pack_gqa: expected None or a bool, got {pack_gqa!r}")
    return problems


def _describe(t) -> str:
    if isinstance(t, torch.Tensor):
        return f"{t.dtype} {tuple(t.shape)} on {t.device}"
    return checks.type_name(t)
