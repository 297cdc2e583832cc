"""Correctness checks: the fp32 reference, FA3's error rule, and the checks run before timing.

FA3's rule: with ref the fp32 (or float64) result and pt the same math in the input dtype,
an implementation passes when max|out - ref| <= 2 * max|pt - ref| + atol, for the output and for
every gradient. Outputs containing NaN or Inf never pass.
"""
from __future__ import annotations

import contextlib
import math
import warnings
from dataclasses import dataclass

import torch

# Slack for the reference's own rounding, relative to the reference's magnitude.
ATOL_REL = 1e-5
# FA3's factor: an implementation may be at most twice as far from the reference as plain math
# in the input dtype.
PT_FACTOR = 2.0
GRAD_NAMES = ("dq", "dk", "dv")
TORCH_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


@dataclass(frozen=True)
class Verdict:
    """One tensor's check: err = max|out - ref|, bound = 2 * max|pt - ref| + atol."""

    what: str
    err: float
    bound: float
    finite: bool = True
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.finite and self.err <= self.bound

    def describe(self) -> str:
        if self.note:
            return f"{self.what} {self.note}"
        if not self.finite:
            return f"{self.what} has NaN/Inf"
        return f"{self.what} err {self.err:.3g} {'<=' if self.ok else '>'} bound {self.bound:.3g}"


def attention_math(q, k, v, scale: float, causal: bool, causal_offset: int = 0):
    """Plain attention in q's dtype. q (..., Sq, D), k and v (..., Sk, D) -> out (..., Sq, D).

    Key j is visible to query i iff j <= i + causal_offset. Rows with no visible key give 0.
    Differentiable, so autograd gives the reference gradients.
    """
    visible = None
    if causal:
        sq, sk = q.shape[-2], k.shape[-2]
        rows = torch.arange(sq, device=q.device).unsqueeze(1)
        cols = torch.arange(sk, device=q.device).unsqueeze(0)
        visible = cols <= rows + causal_offset
    return masked_attention_math(q, k, v, scale, visible)


def masked_attention_math(q, k, v, scale: float, visible=None):
    """attention_math with any mask: visible (Sq, Sk) bool, True where key j is visible to query i
    (None: every key). Rows with no visible key give 0."""
    scores = torch.matmul(q * scale, k.transpose(-1, -2))
    if visible is None:
        probs = torch.softmax(scores, dim=-1)
    else:
        hidden = ~visible
        empty = hidden.all(dim=-1, keepdim=True)
        # Rows with no visible key keep finite scores (no NaN in the softmax or its gradient) and
        # get their probabilities zeroed afterwards.
        scores = scores.masked_fill(hidden & ~empty, float("-inf"))
        probs = torch.softmax(scores, dim=-1).masked_fill(empty, 0.0)
    return torch.matmul(probs, v)


def visible_mask(seqlen_q: int, seqlen_k: int, causal: bool, window=(-1, -1), device=None):
    """(Sq, Sk) bool under flash_attn's mask: key j visible to query i iff
    i + Sk - Sq - left <= j <= i + Sk - Sq + right (a negative side unbounded; causal sets right to 0)."""
    left, right = window
    if causal:
        right = 0
    rows = torch.arange(seqlen_q, device=device).unsqueeze(1)
    cols = torch.arange(seqlen_k, device=device).unsqueeze(0)
    past_diagonal = cols - rows - (seqlen_k - seqlen_q)
    visible = torch.ones(seqlen_q, seqlen_k, dtype=torch.bool, device=device)
    if right >= 0:
        visible &= past_diagonal <= right
    if left >= 0:
        visible &= past_diagonal >= -left
    return visible


def fa3_verdict(what: str, out, ref, pt) -> Verdict:
    """FA3's rule on one tensor; out, ref and pt have the same shape (any dtypes)."""
    out32, ref32, pt32 = out.float(), ref.float(), pt.float()
    finite = bool(torch.isfinite(out32).all())
    err = (out32 - ref32).abs().max().item() if out32.numel() else 0.0
    pt_err = (pt32 - ref32).abs().max().item() if pt32.numel() else 0.0
    scale = ref32.abs().max().item() if ref32.numel() else 0.0
    atol = ATOL_REL * max(1.0, scale)
    return Verdict(what, err if finite else math.inf, PT_FACTOR * pt_err + atol, finite)


@dataclass
class HeadReference:
    """fp32 reference and input-dtype math for one (batch, head): tensors (S, D) in fp32."""

    batch: int
    head: int
    ref: dict
    pt: dict


def head_reference(q, k, v, dout, b: int, h: int, scale: float, causal: bool, causal_offset: int,
                   grads: bool, ref_dtype=torch.float32) -> HeadReference:
    """Reference for head h of batch b of (B, S, H, D) inputs; with grads also dq, dk, dv.

    Memory: a few S x S matrices in ref_dtype (1 GiB each at S = 16k in fp32).
    """
    ref = _head_math(q, k, v, dout, b, h, scale, causal, causal_offset, grads, ref_dtype)
    pt = _head_math(q, k, v, dout, b, h, scale, causal, causal_offset, grads, q.dtype)
    return HeadReference(b, h, ref, pt)


@contextlib.contextmanager
def no_tf32():
    """fp32 matmuls in full fp32: TF32 (10-bit mantissa) would make the reference barely better
    than bf16."""
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


def _head_math(q, k, v, dout, b, h, scale, causal, causal_offset, grads, dtype):
    x, y, z = (t[b, :, h, :].detach().to(dtype).requires_grad_(grads) for t in (q, k, v))
    with torch.enable_grad(), no_tf32():
        out = attention_math(x, y, z, scale, causal, causal_offset)
        result = {"out": out.detach().float()}
        if grads:
            g = torch.autograd.grad(out, (x, y, z), dout[b, :, h, :].to(dtype))
            result.update({name: t.float() for name, t in zip(GRAD_NAMES, g)})
    return result


def packed_reference(q, k, v, dout, seqlens, scale: float, causal: bool, window, grads: bool,
                     dtype=torch.float32) -> dict:
    """Attention over sequences packed without padding, each on its own, in ``dtype``.

    q, k, v, dout: (total, H, D), sequence b at rows sum(seqlens[:b]) .. sum(seqlens[:b + 1]), each
    with Sq == Sk and visible_mask(causal, window) aligned to its own corner; sum(seqlens) == total.
    Returns {'out'} and, with grads, {'dq', 'dk', 'dv'}: (total, H, D) float32 tensors.
    """
    if sum(seqlens) != q.shape[0]:
        raise ValueError(f"seqlens: expected lengths summing to q.shape[0] = {q.shape[0]}, got {sum(seqlens)}")
    x, y, z = (t.detach().to(dtype).requires_grad_(grads) for t in (q, k, v))
    outs, start = [], 0
    with torch.enable_grad(), no_tf32():
        for n in seqlens:
            rows = slice(start, start + n)
            start += n
            # (n, H, D) -> (H, n, D): the heads batch the matmuls of one sequence.
            xs, ys, zs = (t[rows].transpose(0, 1) for t in (x, y, z))
            visible = visible_mask(n, n, causal, window, q.device)
            outs.append(masked_attention_math(xs, ys, zs, scale, visible).transpose(0, 1))
        out = torch.cat(outs)
        result = {"out": out.detach().float()}
        if grads:
            g = torch.autograd.grad(out, (x, y, z), dout.to(dtype))
            result.update({name: t.float() for name, t in zip(GRAD_NAMES, g)})
    return result


def check_against(refs: list[HeadReference], out, grads: dict | None) -> list[Verdict]:
    """Verdicts for an implementation's out (B, S, H, D) and grads {'dq','dk','dv'} on the reference heads.

    The finiteness of the whole tensors is checked too, not only of the sampled heads.
    """
    tensors = {"out": out, **(grads or {})}
    verdicts = []
    for name, full in tensors.items():
        if not bool(torch.isfinite(full).all()):
            verdicts.append(Verdict(name, math.inf, 0.0, finite=False))
            continue
        # err - bound is positive exactly for a failing head, so the largest is the worst one.
        per_head = [
            fa3_verdict(name, full[r.batch, :, r.head, :], r.ref[name], r.pt[name])
            for r in refs
            if name in r.ref
        ]
        worst = max(per_head, key=lambda v: v.err - v.bound, default=None)
        if worst is not None:
            verdicts.append(worst)
    return verdicts


def sample_heads(batch: int, heads: int) -> list[tuple[int, int]]:
    """The (batch, head) pairs checked in a big cell: opposite corners catch stride/offset bugs."""
    pairs = [(0, 0), (batch - 1, heads - 1)]
    return list(dict.fromkeys(pairs))


def random_inputs(batch, seqlen_q, seqlen_k, heads, head_dim, dtype, device, generator=None):
    """q (B, Sq, H, D), k/v/dout like (B, Sk, H, D) / (B, Sq, H, D), standard normal."""
    def rnd(s):
        return torch.randn((batch, s, heads, head_dim), dtype=torch.float32, device=device,
                           generator=generator).to(dtype)
    return rnd(seqlen_q), rnd(seqlen_k), rnd(seqlen_k), rnd(seqlen_q)


def run_with_grads(call, q, k, v, dout, grads: bool):
    """out = call(q, k, v) and, with grads, {'dq','dk','dv'} from one backward with dout."""
    if not grads:
        with torch.no_grad():
            return call(q, k, v), None
    leaves = [t.detach().requires_grad_(True) for t in (q, k, v)]
    with torch.enable_grad():
        out = call(*leaves)
        g = torch.autograd.grad(out, leaves, dout)
    return out.detach(), dict(zip(GRAD_NAMES, g))


def oracle_forward(q, k, v, scale, causal, causal_offset):
    """fa3lite's Numba oracle out (B, Sq, H, D) fp32, or a string saying why it could not run."""
    try:
        from fa3lite.numba_kernels.reference import attention_forward
    except Exception as exc:
        return f"Numba oracle not importable: {type(exc).__name__}: {exc}"
    try:
        with warnings.catch_warnings():
            # Its grid is small at the check's shape; the occupancy warning says nothing here.
            warnings.simplefilter("ignore")
            out, _lse = attention_forward(q, k, v, scale, causal, causal_offset)
        out = torch.as_tensor(out, device=q.device).float()
    except Exception as exc:
        return f"Numba oracle failed: {type(exc).__name__}: {exc}"
    if out.shape != q.shape:
        return f"Numba oracle gave shape {tuple(out.shape)}, expected {tuple(q.shape)}"
    return out
