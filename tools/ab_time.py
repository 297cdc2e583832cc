"""Kernel A/B timing: the forward and the backward of flash_attn_func per cell, in this process,
one JSON line per (mode, d, causal, S) with TFLOP/s.

Meant to be run alternately on two source trees (tools/ab_round.sh), so that clock drift between
runs hits both alike; the bench (python -m fa3lite.bench) stays the tool of record for results.
Modes: fwd, bwd, det (the backward with deterministic=True).
Cells: d in --head-dim x {full, causal} x S in --seqlen, bf16, 16k tokens a batch, width 2048;
inputs rotated past L2 and timed with fa3lite.bench.timing (CUDA events around each call).
--window L: the causal cells take window_size=(L, 0) (the bench's window rows), TFLOP/s counted on
the band's pairs; rows carry "window".

    python3 tools/ab_time.py --tag after [--head-dim 64,128,256] [--seqlen 1k,4k,16k] [--mode fwd,bwd,det]
                             [--masks full,causal] [--soak-ms 200] [--window 4096]
"""
import argparse
import functools
import json

import torch

from fa3lite import flash_attn_func
from fa3lite.bench import flops, timing
from fa3lite.bench.grid import parse_seqlen

TOKENS, WIDTH = 16384, 2048


def cell(d: int, causal: bool, s: int, modes, timer, window: int = -1) -> list[dict]:
    h, b = WIDTH // d, TOKENS // s
    shape = (b, s, h, d)
    set_bytes = 4 * b * s * h * d * 2
    n = timing.rotation_sets(set_bytes, timing.l2_bytes(torch.cuda.current_device()))
    sets = [[torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=i < 3) for i in range(4)]
            for _ in range(n)]
    win = (window, 0) if causal and window >= 0 else (-1, -1)
    call = functools.partial(flash_attn_func, causal=causal, window_size=win)
    out = []
    for mode in modes:
        if mode == "fwd":
            def step(i):
                call(*sets[i][:3])
        else:   # "bwd", or "det": the backward with deterministic=True
            det = mode == "det"
            outs = [call(*st[:3], deterministic=det) for st in sets]

            def step(i):
                torch.autograd.grad(outs[i], sets[i][:3], sets[i][3], retain_graph=True)
        ms = timing.Stats.of(timer.time(step, n)).median
        kind = "fwd" if mode == "fwd" else "bwd"
        fl = (flops.band_flops([s] * b, h, d, causal, win, kind) if win[0] >= 0
              else flops.attention_flops(b, h, s, s, d, causal, kind))
        row = {"mode": mode, "d": d, "causal": causal, "S": s}
        if win[0] >= 0:
            row["window"] = win[0]
        out.append({**row, "ms": ms, "tflops": flops.tflops(fl, ms)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tag", required=True)
    ap.add_argument("--head-dim", default="64,128,256")
    ap.add_argument("--seqlen", default="1k,4k,16k")
    ap.add_argument("--mode", default="fwd,bwd")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--masks", default="full,causal")
    ap.add_argument("--soak-ms", type=float, default=0.0,
                    help="each timed batch after this many ms of the same call back to back (fa3lite.bench's soak)")
    ap.add_argument("--window", type=int, default=-1, help="causal cells with window_size=(WINDOW, 0)")
    a = ap.parse_args()
    timer = timing.CudaTimer(warmup=3, reps=a.reps, soak_s=a.soak_ms / 1000)
    for d in (int(x) for x in a.head_dim.split(",")):
        for causal in (m == "causal" for m in a.masks.split(",")):
            for s in (parse_seqlen(x) for x in a.seqlen.split(",")):
                for r in cell(d, causal, s, a.mode.split(","), timer, a.window):
                    print(json.dumps({"tag": a.tag, **r}), flush=True)


if __name__ == "__main__":
    main()
