"""Session 41 round 3: is the window backward's spread (round 2: 421-569 TFLOP/s at d=128 across
processes) tied to the inputs' addresses? In one process, 6 times: fresh input sets (new
allocations), then 3 timed batches on those same sets of the backward (default, deterministic) of
flash_attn_func at d=128, one 16k sequence, width 2048, window (4096, 0), and the plain causal mask
as a control. One JSON line per batch: the same allocation's batches agree if the spread is the
addresses'."""
import json

import torch

from fa3lite import flash_attn_func
from fa3lite.bench import flops, timing

D, S, H = 128, 16384, 16
timer = timing.CudaTimer(warmup=3, reps=20, soak_s=0.2)
n = timing.rotation_sets(4 * S * H * D * 2, timing.l2_bytes(0))
for alloc in range(6):
    sets = [[torch.randn((1, S, H, D), device="cuda", dtype=torch.bfloat16, requires_grad=i < 3) for i in range(4)]
            for _ in range(n)]
    for window in (4096, -1):
        for det in (False, True):
            outs = [flash_attn_func(*st[:3], causal=True, window_size=(window, 0), deterministic=det) for st in sets]

            def step(i):
                torch.autograd.grad(outs[i], sets[i][:3], sets[i][3], retain_graph=True)
            fl = flops.band_flops([S], H, D, True, (window, 0), "bwd")
            for batch in range(3):
                ms = timing.Stats.of(timer.time(step, n)).median
                print(json.dumps({"alloc": alloc, "window": window, "det": det, "batch": batch,
                                  "tflops": round(flops.tflops(fl, ms), 1)}), flush=True)
            del outs
    del sets
