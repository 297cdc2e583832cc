"""One fa3lite backward for ncu to profile, deterministic or not (issue 9).

    python3 tools/ncu_bwd_probe.py D S causal(0|1) deterministic(0|1)

16k tokens a batch, width 2048, bf16, between cudaProfilerStart/Stop (profile with
`ncu --profile-from-start off -k regex:fa3lite_bwd$ ...`).
"""
import sys

import torch

import fa3lite

D, S, causal, det = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4] == "1"
B, H = 16384 // S, 2048 // D
q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
for _ in range(2):
    fa3lite.flash_attn_func(q, k, v, causal=causal, deterministic=det).sum().backward()
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
out = fa3lite.flash_attn_func(q, k, v, causal=causal, deterministic=det)
out.backward(torch.ones_like(out))
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
