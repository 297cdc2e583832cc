"""Deterministic backward under load: per head dim and mask, one problem large enough for several
waves of CTAs (B=2, S=4096 or --seqlen, H=8), the backward repeated --runs times with
deterministic=True; every repeat must be bitwise equal to the first, and the first within FA3's
rule against the float32 math (explicit softmax, as tests/test_bwd_gpu.py). Prints one line per
case and exits nonzero on any failure.
    python3 tools/det_stress.py [--head-dim 64,128,256] [--seqlen 4096] [--runs 30]
"""
import argparse
import sys

import torch

from fa3lite import flash_attn_func


def grads(q, k, v, do, causal, det):
    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    out = flash_attn_func(q, k, v, causal=causal, deterministic=det, backend="fa3lite")
    return torch.autograd.grad(out, (q, k, v), do)


def reference(q, k, v, do, causal, dtype):
    """Gradients of explicit attention math in `dtype` (scores and softmax in float32, P rounded to
    `dtype` before P V, as tests/test_bwd_gpu.py's `pt`), the float32 one being `ref`."""
    q, k, v = (t.detach().to(dtype).requires_grad_() for t in (q, k, v))
    s = torch.einsum("bqhd,bkhd->bhqk", q, k).float() * q.shape[-1] ** -0.5
    if causal:
        n = s.shape[-1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    out = torch.einsum("bhqk,bkhd->bqhd", torch.softmax(s, -1).to(dtype), v)
    return torch.autograd.grad(out, (q, k, v), do.to(dtype))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--head-dim", default="64,128,256")
    ap.add_argument("--seqlen", type=int, default=4096)
    ap.add_argument("--runs", type=int, default=30)
    a = ap.parse_args()
    bad = 0
    for d in (int(x) for x in a.head_dim.split(",")):
        for causal in (False, True):
            torch.manual_seed(d + causal)
            q, k, v, do = (torch.randn(2, a.seqlen, 8, d, device="cuda", dtype=torch.bfloat16) for _ in range(4))
            first = grads(q, k, v, do, causal, True)
            same = sum(all(torch.equal(x, y) for x, y in zip(first, grads(q, k, v, do, causal, True)))
                       for _ in range(a.runs - 1))
            ref = reference(q, k, v, do, causal, torch.float32)
            pt = reference(q, k, v, do, causal, torch.bfloat16)
            errs = [(float((g.float() - r).abs().max()), 2 * float((p.float() - r).abs().max()) + 1e-3)
                    for g, r, p in zip(first, ref, pt)]
            rule = all(e <= bound for e, bound in errs)
            ok = same == a.runs - 1 and rule
            bad += not ok
            print(f"d={d} causal={causal}: {same + 1}/{a.runs} bitwise equal, rule {'ok' if rule else 'FAILED'} "
                  + " ".join(f"{n} {e:.3g}<={bound:.3g}" for n, (e, bound) in zip(("dq", "dk", "dv"), errs)),
                  flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
