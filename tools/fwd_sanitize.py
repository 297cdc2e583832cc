"""A small forward grid for compute-sanitizer: odd lengths, causal and full, every head dim."""
import torch

from fa3lite import hopper

for D in (64, 128, 256):
    for causal in (False, True):
        q = torch.randn(1, 130, 2, D, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(1, 77, 1, D, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(1, 77, 1, D, device="cuda", dtype=torch.bfloat16)
        out, lse = hopper.forward(q, k, v, D ** -0.5, causal, 77 - 130)
        torch.cuda.synchronize()
print("sanitize grid done")
