"""Torch-only attention with exactly the kernels' semantics, for any device and float dtype.

Serves CPU tensors, non-Hopper GPUs and every input the Hopper kernels cannot take.

Shapes (flash_attn layout): q (B, Sq, Hq, D), k (B, Sk, Hk, D), v (B, Sk, Hk, Dv), Hq a multiple of Hk
(query head h reads key/value head h // (Hq // Hk)); out (B, Sq, Hq, Dv) contiguous in q's dtype; lse (B, Hq, Sq)
float32 contiguous, natural log. Causal: key j is visible to query i iff j <= i + causal_offset;
local_offset (None: no lower edge): only if also j >= i + local_offset (a sliding window's band).
softcap > 0: scores z = softcap * tanh(softmax_scale * q.k / softcap). sink: None or a (Hq,) tensor of
learnable sink logits, one extra term exp(sink[h]) in every row's softmax denominator (so lse
includes it) that contributes no value.
Rows with no visible key (also Sk == 0) give out = 0 and lse = -inf (the sink's logit with a sink),
and zero gradients.

Scores are computed in float32 (float64 for float64 inputs), a block of query rows at a time, so the
scores never take more than about ``_BLOCK_ELEMENTS`` elements whatever the sequence length. Autocast
is switched off inside: under torch.autocast the matmuls would otherwise run in the autocast dtype
(float16 overflows where the float32 math does not). Every operation is differentiable, so autograd
can differentiate the backward itself (double backward).
"""
from __future__ import annotations

import contextlib
import functools
import math

import torch

# Scores held at once, in elements of the compute dtype (2^24 fp32 = 64 MiB).
_BLOCK_ELEMENTS = 1 << 24


def _without_autocast(fn):
    """Run ``fn(q, ...)`` (q its first argument after dout for the backward) with autocast off on
    q's device type."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        device_type = next(a for a in args if isinstance(a, torch.Tensor)).device.type
        ctx = (torch.autocast(device_type, enabled=False) if torch.amp.is_autocast_available(device_type)
               else contextlib.nullcontext())
        with ctx:
            return fn(*args, **kwargs)

    return wrapper


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def _heads_grouped(t: torch.Tensor, groups: int, dtype: torch.dtype) -> torch.Tensor:
    """(B, S, H, D) -> (B, H // groups, groups, S, D) in ``dtype``; head h = kv_head * groups + g."""
    b, s, h, d = t.shape
    return t.to(dtype).permute(0, 2, 1, 3).reshape(b, h // groups, groups, s, d)


def _kv_grouped(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(B, Sk, Hk, D) -> (B, Hk, 1, Sk, D): broadcasts over the query heads of a group."""
    return t.to(dtype).permute(0, 2, 1, 3).unsqueeze(2)


def _ungroup(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(B, Hk, G, S, D) -> (B, S, Hk * G, D) contiguous in ``dtype``."""
    b, hk, g, s, d = t.shape
    return t.reshape(b, hk * g, s, d).permute(0, 2, 1, 3).to(dtype).contiguous()


def _row_blocks(q: torch.Tensor, k: torch.Tensor):
    """Query row ranges [start, stop) such that one block's scores stay near _BLOCK_ELEMENTS."""
    b, sq, hq, _ = q.shape
    rows = max(1, _BLOCK_ELEMENTS // max(1, b * hq * k.shape[1]))
    return [(start, min(start + rows, sq)) for start in range(0, sq, rows)]


def _sink_grouped(sink, hk: int, dtype: torch.dtype):
    """(Hq,) -> (1, Hk, G, 1) in ``dtype``: broadcasts over batch and rows; head h = kv_head * G + g."""
    return sink.to(dtype).reshape(1, hk, -1, 1)


def _probabilities(q_blk, kg, start, softmax_scale, causal, causal_offset, local_offset=None, softcap=0.0,
                   sink=None):
    """Softmax probabilities P (B, Hk, G, rows, Sk), lse (B, Hk, G, rows) of one query block, and with
    softcap the derivative of the softcapped score by the scaled one, 1 - tanh^2 (else None). ``sink``
    grouped as _sink_grouped gives it."""
    scores = torch.matmul(q_blk, kg.transpose(-1, -2)) * softmax_scale
    dtanh = None
    if softcap > 0:
        t = torch.tanh(scores / softcap)
        scores, dtanh = t * softcap, 1 - t * t
    if causal or local_offset is not None:
        rows = torch.arange(start, start + q_blk.shape[-2], device=q_blk.device)
        cols = torch.arange(kg.shape[-2], device=q_blk.device)
        dist = cols[None, :] - rows[:, None]
        visible = torch.ones_like(dist, dtype=torch.bool)
        if causal:
            visible &= dist <= causal_offset
        if local_offset is not None:
            visible &= dist >= local_offset
        scores = scores.masked_fill(~visible, -math.inf)
    lse = torch.logsumexp(scores, dim=-1)
    if sink is not None:
        lse = torch.logaddexp(lse, sink)
    # Fully masked rows have lse = -inf; subtracting 0 instead keeps exp(-inf) = 0 rather than NaN.
    shift = torch.where(torch.isneginf(lse), torch.zeros_like(lse), lse)
    return torch.exp(scores - shift.unsqueeze(-1)), lse, dtanh


def is_empty(q: torch.Tensor, k: torch.Tensor) -> bool:
    """No output rows, or no keys: the result is fixed without any arithmetic."""
    return q.shape[0] == 0 or q.shape[1] == 0 or q.shape[2] == 0 or k.shape[1] == 0


@_without_autocast
def forward(q, k, v, softmax_scale: float, causal: bool, causal_offset: int, local_offset: int | None = None,
            softcap: float = 0.0, sink=None):
    """Attention forward. Returns (out (B, Sq, Hq, D) in q.dtype, lse (B, Hq, Sq) float32)."""
    b, sq, hq, _ = q.shape
    if is_empty(q, k):
        out = torch.zeros((b, sq, hq, v.shape[3]), dtype=q.dtype, device=q.device)
        if sink is not None:
            return out, sink.to(torch.float32).reshape(1, hq, 1).expand(b, hq, sq).contiguous()
        return out, torch.full((b, hq, sq), -math.inf, dtype=torch.float32, device=q.device)
    cdt = _compute_dtype(q.dtype)
    groups = hq // k.shape[2]
    qg, kg, vg = _heads_grouped(q, groups, cdt), _kv_grouped(k, cdt), _kv_grouped(v, cdt)
    sg = _sink_grouped(sink, k.shape[2], cdt) if sink is not None else None
    out_blocks, lse_blocks = [], []
    for start, stop in _row_blocks(q, k):
        p, lse_blk, _ = _probabilities(qg[..., start:stop, :], kg, start, softmax_scale, causal, causal_offset,
                                       local_offset, softcap, sg)
        out_blocks.append(torch.matmul(p, vg))
        lse_blocks.append(lse_blk)
    out = _ungroup(torch.cat(out_blocks, dim=-2), q.dtype)
    lse = torch.cat(lse_blocks, dim=-1).reshape(b, hq, sq).to(torch.float32).contiguous()
    return out, lse


@_without_autocast
def backward(dout, q, k, v, out, lse, softmax_scale: float, causal: bool, causal_offset: int,
             need_dq: bool = True, need_dkv: bool = True, local_offset: int | None = None, softcap: float = 0.0,
             sink=None):
    """Attention backward. Returns (dq, dk, dv), contiguous, shaped and typed like q, k, v; dq is None
    without ``need_dq``, dk and dv None without ``need_dkv`` (their matmuls are skipped). With a
    sink, (dq, dk, dv, dsink): dsink (Hq,) in the sink's dtype, -sum over batch and rows of
    exp(sink - lse) * rowsum(dout * out).

    ``out`` enters through rowsum(dout * out), as in the kernels. ``lse`` is recomputed in the compute
    dtype instead of read back, so float64 inputs get float64-accurate gradients.
    """
    if is_empty(q, k):
        zeros = tuple(torch.zeros(t.shape, dtype=t.dtype, device=t.device) for t in (q, k, v))
        grads = (zeros[0] if need_dq else None, *(zeros[1:] if need_dkv else (None, None)))
        # no query: no row; no key: out = 0, so dpsum = 0 in every row
        return grads if sink is None else grads + (torch.zeros_like(sink),)
    del lse  # recomputed per block, see the docstring
    cdt = _compute_dtype(q.dtype)
    groups = q.shape[2] // k.shape[2]
    qg, kg, vg = _heads_grouped(q, groups, cdt), _kv_grouped(k, cdt), _kv_grouped(v, cdt)
    dog, og = _heads_grouped(dout, groups, cdt), _heads_grouped(out, groups, cdt)
    dpsum = (dog * og).sum(dim=-1)  # (B, Hk, G, Sq)
    dkg = torch.zeros(kg.shape[:2] + kg.shape[3:], dtype=cdt, device=q.device)  # (B, Hk, Sk, D)
    dvg = torch.zeros(vg.shape[:2] + vg.shape[3:], dtype=cdt, device=q.device)  # (B, Hk, Sk, Dv)
    sg = _sink_grouped(sink, k.shape[2], cdt) if sink is not None else None
    dsink = torch.zeros_like(sg) if sink is not None else None
    dq_blocks = []
    for start, stop in _row_blocks(q, k):
        q_blk, do_blk = qg[..., start:stop, :], dog[..., start:stop, :]
        p, lse_blk, dtanh = _probabilities(q_blk, kg, start, softmax_scale, causal, causal_offset, local_offset,
                                           softcap, sg)
        if need_dkv:
            dvg = dvg + torch.matmul(p.transpose(-1, -2), do_blk).sum(dim=2)
        dp = torch.matmul(do_blk, vg.transpose(-1, -2))
        ds = p * (dp - dpsum[..., start:stop].unsqueeze(-1))
        if dtanh is not None:
            ds = ds * dtanh
        if sink is not None:
            # the sink's probability exp(sink - lse) times its dP (0: no value) minus dpsum
            dsink = dsink - (torch.exp(sg - lse_blk) * dpsum[..., start:stop]).sum(dim=(0, 3), keepdim=True)
        if need_dq:
            dq_blocks.append(torch.matmul(ds, kg) * softmax_scale)
        if need_dkv:
            dkg = dkg + torch.matmul(ds.transpose(-1, -2), q_blk).sum(dim=2) * softmax_scale
    dq = _ungroup(torch.cat(dq_blocks, dim=-2), q.dtype) if need_dq else None
    dk = dv = None
    if need_dkv:
        dk = dkg.permute(0, 2, 1, 3).to(k.dtype).contiguous()
        dv = dvg.permute(0, 2, 1, 3).to(v.dtype).contiguous()
    if sink is None:
        return dq, dk, dv
    return dq, dk, dv, dsink.reshape(-1).to(sink.dtype)


def _sequences(cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k):
    """[(q_start, seqlen_q, k_start, seqlen_k)] per sequence (reads the offsets back to the host)."""
    cq, ck = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    uq = seqused_q.tolist() if seqused_q is not None else [b - a for a, b in zip(cq, cq[1:])]
    uk = seqused_k.tolist() if seqused_k is not None else [b - a for a, b in zip(ck, ck[1:])]
    return list(zip(cq[:-1], uq, ck[:-1], uk))


def forward_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, softmax_scale: float, causal: bool, causal_offset: int,
                   local_offset: int | None = None, softcap: float = 0.0, sink=None, seqused_q=None, seqused_k=None,
                   pack_group: int = 1):
    """Varlen forward, one sequence at a time (fa3lite/hopper/varlen.py has the layout and the mask:
    the offsets are relative to each sequence's diagonal). Returns out (total_q, Hq, D) in q.dtype,
    zero in rows no sequence uses, and lse (Hq, total_q) float32, -inf there.
    pack_group G > 1 (packed GQA, no sink): a sequence's rows are (query position, g) pairs of K/V
    head h's query head h * G + g, so q has Hk heads and each sequence G * positions rows; unpacked
    to (positions, Hk * G) heads for the math and packed back."""
    out = torch.zeros((*q.shape[:2], v.shape[2]), dtype=q.dtype, device=q.device)
    lse = torch.full((q.shape[1], q.shape[0]), -math.inf, dtype=torch.float32, device=q.device)
    hk, g = q.shape[1], pack_group
    for qs, sq, ks, sk in _sequences(cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k):
        rows = q[qs:qs + sq]
        positions = sq // g
        if g > 1:   # (positions, G, Hk, D) -> (positions, Hk * G, D)
            rows = rows.view(positions, g, hk, -1).transpose(1, 2).reshape(positions, hk * g, -1)
        o, l = forward(rows.unsqueeze(0), k[ks:ks + sk].unsqueeze(0), v[ks:ks + sk].unsqueeze(0),
                       softmax_scale, causal, causal_offset + sk - positions,
                       None if local_offset is None else local_offset + sk - positions, softcap, sink)
        o, l = o[0], l[0]
        if g > 1:
            o = o.view(positions, hk, g, -1).transpose(1, 2).reshape(sq, hk, -1)
            l = l.view(hk, g, positions).transpose(1, 2).reshape(hk, sq)
        out[qs:qs + sq] = o
        lse[:, qs:qs + sq] = l
    return out, lse


def backward_varlen(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, softmax_scale: float, causal: bool,
                    causal_offset: int, local_offset: int | None = None, softcap: float = 0.0, sink=None,
                    seqused_q=None, seqused_k=None):
    """Varlen backward, one sequence at a time: (dq, dk, dv) shaped like q, k, v (zero in unused
    rows), and dsink after them with a sink."""
    dq, dk, dv = (torch.zeros(t.shape, dtype=t.dtype, device=t.device) for t in (q, k, v))
    dsink = torch.zeros_like(sink) if sink is not None else None
    for qs, sq, ks, sk in _sequences(cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k):
        grads = backward(dout[qs:qs + sq].unsqueeze(0), q[qs:qs + sq].unsqueeze(0), k[ks:ks + sk].unsqueeze(0),
                         v[ks:ks + sk].unsqueeze(0), out[qs:qs + sq].unsqueeze(0), None, softmax_scale, causal,
                         causal_offset + sk - sq, local_offset=None if local_offset is None else local_offset + sk - sq,
                         softcap=softcap, sink=sink)
        dq[qs:qs + sq], dk[ks:ks + sk], dv[ks:ks + sk] = grads[0][0], grads[1][0], grads[2][0]
        if sink is not None:
            dsink = dsink + grads[3]
    return (dq, dk, dv) if sink is None else (dq, dk, dv, dsink)
