"""ncu target: the varlen backward and the dense one at equal lengths (7 x 2341 tokens, width 2048,
bf16, full mask), each once between cudaProfilerStart/Stop after a warm-up call.
    ncu --profile-from-start off -k fa3lite_bwd python3 varlen_ncu.py D"""
import sys

import torch

from fa3lite import flash_attn_func, flash_attn_varlen_func

d = int(sys.argv[1])
n, length, heads = 7, 2341, 2048 // d
cu = torch.arange(0, (n + 1) * length, length, device="cuda", dtype=torch.int32)
q, k, v = (torch.randn(n * length, heads, d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
dq, dk, dv = (t.detach().view(n, length, heads, d).clone().requires_grad_() for t in (q, k, v))
calls = {"varlen": (flash_attn_varlen_func(q, k, v, cu, cu, length, length), (q, k, v)),
         "dense": (flash_attn_func(dq, dk, dv), (dq, dk, dv))}
douts = {kind: torch.randn_like(out) for kind, (out, _) in calls.items()}
for kind, (out, leaves) in calls.items():
    torch.autograd.grad(out, leaves, douts[kind], retain_graph=True)
torch.cuda.synchronize()
torch.cuda.profiler.start()
for kind, (out, leaves) in calls.items():
    torch.autograd.grad(out, leaves, douts[kind], retain_graph=True)
torch.cuda.synchronize()
torch.cuda.profiler.stop()
print("profiled", list(calls))
