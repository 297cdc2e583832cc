"""The reference self-check: runs without a GPU, on the CPU, at a tiny shape.

It checks fa3lite's portable path (flash_attn_func with backend="torch") against attention in
float64, by FA3's rule with the same math in the input dtype as the yardstick, forward and
backward, full and bottom-right causal with Sq != Sk. It is what the benchmark can still do on a
machine without a Hopper GPU, and it is run (and recorded) before every benchmark too.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .reference import GRAD_NAMES, attention_math, fa3_verdict, oracle_forward

# Small enough to take well under a second on a CPU; Sq != Sk exercises bottom-right causal, and
# neither length is a multiple of a tile.
_SHAPE = dict(batch=2, seqlen_q=50, seqlen_k=67, heads=3, head_dim=32)
_SEED = 20261121


@dataclass
class SelfCheck:
    """lines: one per check, human-readable; ok False when any check failed (not when skipped)."""

    lines: list[str] = field(default_factory=list)
    ok: bool = True
    ran: int = 0


def reference_self_check() -> SelfCheck:
    """Run every check of the module docstring on the CPU; never raises for a failing check."""
    result = SelfCheck()
    try:
        import fa3lite

        fn = fa3lite.flash_attn_func
    except Exception as exc:
        result.lines.append(
            f"fa3lite.flash_attn_func(backend='torch'): skipped, not importable ({type(exc).__name__}: {exc})"
        )
        fn = None
    gen = torch.Generator(device="cpu").manual_seed(_SEED)
    s = _SHAPE
    for dtype in (torch.float32, torch.bfloat16):
        for causal in (False, True):
            q, k, v, dout = (
                torch.randn((s["batch"], n, s["heads"], s["head_dim"]), generator=gen, dtype=torch.float64)
                for n in (s["seqlen_q"], s["seqlen_k"], s["seqlen_k"], s["seqlen_q"])
            )
            offset = s["seqlen_k"] - s["seqlen_q"]
            scale = s["head_dim"] ** -0.5
            ref = _math_bshd(q, k, v, dout, scale, causal, offset)
            pt = _math_bshd(*(t.to(dtype) for t in (q, k, v, dout)), scale, causal, offset)
            tag = f"{str(dtype).removeprefix('torch.')} {'causal' if causal else 'full'}"
            if fn is not None:
                _check_fa3lite(result, fn, tag, q, k, v, dout, dtype, scale, causal, ref, pt)
            _check_oracle(result, tag, q, k, v, dtype, scale, causal, offset, ref["out"], pt["out"])
    return result


def _math_bshd(q, k, v, dout, scale, causal, offset):
    """attention_math on (B, S, H, D) tensors in their dtype -> {'out','dq','dk','dv'} (B, S, H, D)."""
    leaves = [t.transpose(1, 2).detach().requires_grad_(True) for t in (q, k, v)]
    with torch.enable_grad():
        out = attention_math(*leaves, scale, causal, offset)
        grads = torch.autograd.grad(out, leaves, dout.transpose(1, 2))
    res = {"out": out.detach().transpose(1, 2)}
    res.update({n: g.transpose(1, 2) for n, g in zip(GRAD_NAMES, grads)})
    return res


def _check_fa3lite(result, fn, tag, q, k, v, dout, dtype, scale, causal, ref, pt):
    leaves = [t.to(dtype).requires_grad_(True) for t in (q, k, v)]
    try:
        with torch.enable_grad():
            out = fn(*leaves, softmax_scale=scale, causal=causal, backend="torch")
            grads = torch.autograd.grad(out, leaves, dout.to(dtype))
    except Exception as exc:
        result.ok = False
        result.lines.append(f"fa3lite backend='torch' {tag}: FAILED to run ({type(exc).__name__}: {exc})")
        return
    got = {"out": out.detach(), **dict(zip(GRAD_NAMES, grads))}
    verdicts = [fa3_verdict(n, got[n], ref[n], pt[n]) for n in got]
    ok = all(v.ok for v in verdicts)
    result.ok &= ok
    result.ran += 1
    result.lines.append(
        f"fa3lite backend='torch' {tag} vs float64: {'ok' if ok else 'WRONG'} ("
        + "; ".join(v.describe() for v in verdicts) + ")"
    )


def _check_oracle(result, tag, q, k, v, dtype, scale, causal, offset, ref_out, pt_out):
    if dtype != torch.float32:
        return  # the oracle computes in fp32 from fp32 inputs; one dtype is enough to check it
    out = oracle_forward(*(t.float() for t in (q, k, v)), scale, causal, offset)
    if isinstance(out, str):
        result.lines.append(f"Numba oracle {tag}: skipped ({out})")
        return
    verdict = fa3_verdict("out", out, ref_out, pt_out)
    result.ok &= verdict.ok
    result.ran += 1
    result.lines.append(f"Numba oracle {tag} vs float64: {'ok' if verdict.ok else 'WRONG'} ({verdict.describe()})")
