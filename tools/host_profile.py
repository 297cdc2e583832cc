"""Where the host time of one small forward call goes (cProfile over many calls on a GPU)."""
import cProfile
import pstats
import time

import torch

import fa3lite
from fa3lite import hopper

q = torch.randn(1, 128, 16, 128, device="cuda", dtype=torch.bfloat16)
k, v = torch.randn_like(q), torch.randn_like(q)


def timed(label, fn, n=300):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    dt = (time.perf_counter() - t) / n * 1e6
    torch.cuda.synchronize()
    print(f"{label:40s} {dt:8.1f} us/call", flush=True)


timed("flash_attn_func", lambda: fa3lite.flash_attn_func(q, k, v, causal=True))
timed("torch.ops.fa3lite.fwd", lambda: torch.ops.fa3lite.fwd(q, k, v, 0.08, True, 0))
timed("hopper.forward", lambda: hopper.forward(q, k, v, 0.08, True, 0))
from fa3lite.runtime import tma  # noqa: E402
timed("tma.bshd_map x1", lambda: tma.bshd_map(q, 128))
from fa3lite import checks  # noqa: E402
timed("checks.kernel_reasons", lambda: checks.kernel_reasons(q, k, v, 0.08))
pr = cProfile.Profile()
pr.enable()
for _ in range(300):
    fa3lite.flash_attn_func(q, k, v, causal=True)
pr.disable()
torch.cuda.synchronize()
pstats.Stats(pr).sort_stats("tottime").print_stats(18)
