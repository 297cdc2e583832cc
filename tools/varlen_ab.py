"""Varlen forward timing for A/B between trees: the bench's packed batch (fa3lite.bench.feature_cases
varlen_lengths: 7 sequences summing to 16k tokens), width 2048, bf16, flash_attn_varlen_func's forward
timed between CUDA events (--reps calls back to back) --repeats times, each its own measurement, so
call-to-call spread shows; then the bench's dense comparator (flash_attn_func on 7 sequences of the
mean length, kind "dense"). One JSON line per (kind, d, mask), carrying the batch's lengths. --mode bwd times the backward alone
(torch.autograd.grad of one forward's output, graph kept). Run from the tree to time (PYTHONPATH=.).
    python3 tools/varlen_ab.py --tag NAME [--head-dim 128,256] [--repeats 5] [--mode fwd|bwd]
                               [--lengths 2341,2341,...]   (another packed batch; the dense comparator
                                                            takes its count and mean length)
                               [--group 4]                 (GQA: query heads per K/V head)
                               [--masks causal]            (one mask; default full,causal)
                               [--soak-ms 200]             (each measurement after 200 ms of the call)
"""
import argparse
import json
import torch

from fa3lite import flash_attn_func, flash_attn_varlen_func
from fa3lite.bench.flops import band_flops
from fa3lite.bench.timing import soak

LENGTHS = (3970, 2089, 3616, 2234, 677, 1572, 2226)   # feature_cases.varlen_lengths(16384), pinned here
WIDTH = 2048


def back_to_back_ms(call, repeats: int, reps: int, soak_s: float = 0.0) -> list[float]:
    """`call` once (compiles, plans), then `repeats` measurements of `reps` calls back to back between
    CUDA events, each after soak_s seconds of the same call (fa3lite.bench's soak): ms per call, one
    figure per measurement."""
    call()
    torch.cuda.synchronize()
    ms = []
    for _ in range(repeats):
        if soak_s > 0:
            soak(lambda _: call(), 1, soak_s)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            call()
        end.record()
        end.synchronize()
        ms.append(start.elapsed_time(end) / reps)
    return ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tag", required=True)
    ap.add_argument("--head-dim", default="128,256")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--mode", choices=("fwd", "bwd"), default="fwd")
    ap.add_argument("--lengths", default=",".join(map(str, LENGTHS)))
    ap.add_argument("--group", type=int, default=1, help="query heads per K/V head (GQA)")
    ap.add_argument("--masks", default="full,causal", help="masks to time: full, causal or full,causal")
    ap.add_argument("--soak-ms", type=float, default=0.0,
                    help="each measurement after this many ms of the same call back to back (fa3lite.bench's soak)")
    args = ap.parse_args()
    lengths_varlen = tuple(int(x) for x in args.lengths.split(","))
    grad = args.mode == "bwd"
    cu = torch.tensor((0,) + lengths_varlen, dtype=torch.int64).cumsum(0).to("cuda", torch.int32)
    total, max_len = sum(lengths_varlen), max(lengths_varlen)
    mean = round(total / len(lengths_varlen))
    for d in (int(x) for x in args.head_dim.split(",")):
        heads = WIDTH // d
        q, k, v = (torch.randn(total, h, d, device="cuda", dtype=torch.bfloat16, requires_grad=grad)
                   for h in (heads, heads // args.group, heads // args.group))
        dq, dk, dv = (torch.randn(len(lengths_varlen), mean, h, d, device="cuda", dtype=torch.bfloat16,
                                  requires_grad=grad) for h in (heads, heads // args.group, heads // args.group))
        masks = [m == "causal" for m in args.masks.split(",")]
        for kind, causal in ((kind, causal) for kind in ("varlen", "dense") for causal in masks):
            lengths = lengths_varlen if kind == "varlen" else (mean,) * len(lengths_varlen)

            def forward():
                if kind == "dense":
                    return flash_attn_func(dq, dk, dv, causal=causal)
                return flash_attn_varlen_func(q, k, v, cu, cu, max_len, max_len, causal=causal)
            call = forward
            if grad:
                out = forward()
                leaves, dout = (dq, dk, dv) if kind == "dense" else (q, k, v), torch.randn_like(out)

                def call():
                    return torch.autograd.grad(out, leaves, dout, retain_graph=True)
            flops = band_flops(lengths, heads, d, causal, (-1, -1), args.mode)
            runs = [flops / (ms * 1e-3) / 1e12 for ms in back_to_back_ms(call, args.repeats, args.reps,
                                                                             args.soak_ms / 1000)]
            print(json.dumps({"tag": args.tag, "lengths": args.lengths, "mode": args.mode, "kind": kind, "d": d,
                              "causal": causal, "group": args.group,
                              "tflops": [round(x, 1) for x in runs]}), flush=True)


if __name__ == "__main__":
    main()
