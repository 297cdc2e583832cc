"""A small forward grid for compute-sanitizer: odd lengths, causal and full, every head dim and tile
(several key blocks per tile, so the K/V ring wraps and pingpong turns alternate many times)."""
import torch

from fa3lite import hopper

for D in (64, 128, 256):
    for causal in (False, True):
        for Sq, Sk in ((130, 77), (400, 701), (333, 5000)):
            q = torch.randn(1, Sq, 2, D, device="cuda", dtype=torch.bfloat16)
            k = torch.randn(1, Sk, 1, D, device="cuda", dtype=torch.bfloat16)
            v = torch.randn(1, Sk, 1, D, device="cuda", dtype=torch.bfloat16)
            out, lse = hopper.forward(q, k, v, D ** -0.5, causal, Sk - Sq)
            torch.cuda.synchronize()
print("sanitize grid done")
