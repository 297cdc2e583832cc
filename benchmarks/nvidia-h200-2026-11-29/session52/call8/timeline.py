"""Session 52 call 8 (call 6's timeline.py with a backward mode: `D S causal bwd`): the kernels of one
backward call (the forward's out and a dout made once; each timed call is the backward alone), so the
preprocess and postprocess show beside the main kernel (16k tokens, width 2048, bf16). Per phase: cold (no soak) and after
a 200 ms soak of the same call: CUDA-event time per call over 50 back-to-back calls, then a
torch.profiler window of 20 calls with every GPU activity's mean duration and count, and the SM
clock (nvidia-smi) right after."""
import subprocess
import sys
import time

import torch

import fa3lite

D, S, causal = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
bwd = len(sys.argv) > 4 and sys.argv[4] == "bwd"
B, H = 16384 // S, 2048 // D
q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
if bwd:
    out = fa3lite.flash_attn_func(q, k, v, causal=causal)
    dout = torch.randn_like(out)
    f = lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)  # noqa: E731
else:
    f = lambda: fa3lite.flash_attn_func(q, k, v, causal=causal)  # noqa: E731
flops = 4 * B * H * S * S * D / (2 if causal else 1) * (2.5 if bwd else 1)
for _ in range(3):
    f()
torch.cuda.synchronize()


def timed(n):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(n):
        f()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) * 1e3 / n


def clock():
    return subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader"],
                          capture_output=True, text=True).stdout.strip()


for phase in ("cold", "soaked"):
    if phase == "soaked":
        t0 = time.time()
        while time.time() - t0 < 0.2:
            f()
    us = timed(50)
    print(f"{phase}: {us:.1f} us a call, {flops / us / 1e6:.0f} TFLOP/s; clock/power {clock()}", flush=True)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            f()
        torch.cuda.synchronize()
    rows = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            r = rows.setdefault(e.name[:70], [0, 0.0])
            r[0] += 1
            r[1] += e.device_time
    for name, (n, t) in sorted(rows.items(), key=lambda x: -x[1][1]):
        print(f"   {n:4d} x {t / n:8.1f} us  {name}")
