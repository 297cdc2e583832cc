"""Packed varlen forwards for compute-sanitizer and as a stress check of the persistent grid's
per-sequence maps (scheduler.cuh SeqMapSets): many sequences of mixed lengths (0, 1, odd, past
several tiles) and enough heads that each CTA claims tiles of several sequences in turn. Each
result is compared with the torch fallback (FA3's rule against an fp32 reference, per call).

    PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck python3 tools/varlen_sanitize.py \
        [--quick] [--head-dims 256] [--heads 4]
"""
import argparse
import sys

import torch

from fa3lite import flash_attn_varlen_func

LENGTHS = (0, 1, 700, 7, 129, 1, 333, 0, 1024, 65, 513, 2, 900, 191, 64, 1500, 3, 257)


def run(d: int, causal: bool, lengths, heads: int) -> float:
    """Largest error of the kernels' result over the bound (FA3's rule; <= 1 passes)."""
    cu = torch.tensor((0,) + tuple(lengths), dtype=torch.int64).cumsum(0).to("cuda", torch.int32)
    total, longest = int(cu[-1]), max(lengths)
    q, k, v = (torch.randn(total, heads, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    args = (cu, cu, longest, longest)
    out = flash_attn_varlen_func(q, k, v, *args, causal=causal, backend="fa3lite")
    ref = flash_attn_varlen_func(q.float(), k.float(), v.float(), *args, causal=causal, backend="torch")
    low = flash_attn_varlen_func(q, k, v, *args, causal=causal, backend="torch")
    torch.cuda.synchronize()
    bound = 2 * (low.float() - ref).abs().max().item() + 1e-5
    return (out.float() - ref).abs().max().item() / bound


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="d = 128 only, fewer heads")
    ap.add_argument("--head-dims", default="64,128,256", help="comma-separated (without --quick)")
    ap.add_argument("--heads", type=int, default=16, help="query heads (without --quick)")
    args = ap.parse_args()
    worst = 0.0
    for d in (128,) if args.quick else tuple(int(x) for x in args.head_dims.split(",")):
        for causal in (False, True):
            for lengths in (LENGTHS, LENGTHS[::-1]):
                ratio = run(d, causal, lengths, 4 if args.quick else args.heads)
                print(f"d={d} causal={causal} first={lengths[0]} error/bound {ratio:.3f}", flush=True)
                worst = max(worst, ratio)
    print(f"varlen sanitize done, worst error/bound {worst:.3f}")
    return 0 if worst <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
