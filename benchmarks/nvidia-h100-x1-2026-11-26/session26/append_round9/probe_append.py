"""Interleaved A/B in one process: a decode step with one appended row, the append by the kernel
(the signature's plan) vs by torch's ops (the plan's appends forced off). Host us per call (100 calls
back to back) and GPU us per call (CUDA-graph replays of 20 calls), medians of 9 rounds."""
import statistics
import time

import torch

import fa3lite
from fa3lite import callkey

b, L, hk, hq, d = 1, 1024, 8, 32, 128
q = torch.randn(b, 1, hq, d, device="cuda", dtype=torch.bfloat16)
kc, vc = (torch.randn(b, L, hk, d, device="cuda", dtype=torch.bfloat16) for _ in range(2))
kn, vn = (torch.randn(b, 1, hk, d, device="cuda", dtype=torch.bfloat16) for _ in range(2))
seq = torch.full((b,), L - 1, dtype=torch.int32, device="cuda")


def call():
    return fa3lite.flash_attn_with_kvcache(q, kc, vc, kn, vn, cache_seqlens=seq, softmax_scale=d ** -0.5, causal=True,
                                           backend="fa3lite")


for _ in range(3):
    call()
(plan,) = [v for v in callkey._passed.values() if v is not None]
kernel = plan.appends
assert kernel, "the append kernel did not take the call"
graphs = {}
for name, appends in (("kernel", kernel), ("torch", False)):
    plan.appends = appends
    call()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(20):
            call()
    graphs[name] = g
host, gpu = {"kernel": [], "torch": []}, {"kernel": [], "torch": []}
for _ in range(9):
    for name, appends in (("kernel", kernel), ("torch", False)):
        plan.appends = appends
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(100):
            call()
        host[name].append((time.perf_counter() - t) / 100 * 1e6)
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        graphs[name].replay()
        e.record()
        torch.cuda.synchronize()
        gpu[name].append(s.elapsed_time(e) * 1000 / 20)
for name in host:
    print(f"append by {name}: host {statistics.median(host[name]):.1f} us, GPU {statistics.median(gpu[name]):.1f} us per call")
