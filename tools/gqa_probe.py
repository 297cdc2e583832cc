"""GQA backward cost (device only): flash_attn_func's backward with Hk < Hq against the same call with
Hk = Hq (the same FLOPs: one K/V head per query head), 16k tokens a batch, width 2048, bf16, timed
between CUDA events over --reps calls (torch.autograd.grad of one forward's output, graph kept),
--repeats measurements each. One JSON line per (d, S, causal, Hk).
    python3 tools/gqa_probe.py [--head-dim 64,128] [--seqlen 1024,4096] [--ratios 1,4,8] [--tag T]
                               [--masks full,causal] [--lpt plan|l2|head|all]
--lpt replaces the causal launch order's groups (bwd.lpt_heads) for a comparison: l2 = L2-sized groups
counting a pair's Hq / Hk heads, head = L2-sized counting one head (the library's rule), all = every
pair in one group; plan = the library's choice.
"""
import argparse
import json

import torch

from fa3lite import flash_attn_func
from fa3lite.bench.flops import attention_flops
from fa3lite.hopper import bwd, common
from varlen_ab import back_to_back_ms   # tools/ is this script's directory

_PLAN_LPT = bwd.lpt_heads
# (q, v, pairs) -> pairs per group; a pair's query heads: Hq / Hk (the probe's shapes are all grouped)
LPT_RULES = {
    "l2": lambda q, v, pairs: common.lpt_group(
        q.shape[1] * (q.shape[3] * q.element_size() * 2 + q.shape[3] * 4) * (q.shape[2] // v.shape[2]), pairs,
        q.device),
    "head": _PLAN_LPT,
    "all": lambda q, v, pairs: pairs,
}

TOKENS, WIDTH = 16384, 2048


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--head-dim", default="64,128")
    ap.add_argument("--seqlen", default="1024,4096")
    ap.add_argument("--ratios", default="1,4,8")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--tag", default="")
    ap.add_argument("--masks", default="full,causal")
    ap.add_argument("--lpt", choices=("plan",) + tuple(LPT_RULES), default="plan")
    args = ap.parse_args()
    if args.lpt != "plan":
        bwd.lpt_heads = LPT_RULES[args.lpt]
    masks = [m == "causal" for m in args.masks.split(",")]
    for d in (int(x) for x in args.head_dim.split(",")):
        hq = WIDTH // d
        for s in (int(x) for x in args.seqlen.split(",")):
            b = TOKENS // s
            for causal in masks:
                for ratio in (int(x) for x in args.ratios.split(",")):
                    hk = hq // ratio
                    q = torch.randn(b, s, hq, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                    k, v = (torch.randn(b, s, hk, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                            for _ in range(2))
                    out = flash_attn_func(q, k, v, causal=causal)
                    dout = torch.randn_like(out)
                    call = lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)  # noqa: E731
                    ms = back_to_back_ms(call, args.repeats, args.reps)
                    flops = attention_flops(b, hq, s, s, d, causal, "bwd")
                    print(json.dumps({"tag": args.tag, "lpt": args.lpt, "d": d, "S": s, "causal": causal, "hq": hq,
                                      "hk": hk, "ms": [round(x, 4) for x in ms],
                                      "tflops": [round(flops / (x * 1e-3) / 1e12, 1) for x in ms]}), flush=True)
                    del q, k, v, out, dout


if __name__ == "__main__":
    main()
