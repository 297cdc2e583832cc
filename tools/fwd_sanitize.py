"""A small forward grid for compute-sanitizer: odd lengths, causal and full, every head dim and tile
(several key blocks per tile, so the K/V ring wraps and pingpong turns alternate many times)."""
import torch

from fa3lite import hopper

for D in (64, 128, 256):
    for causal in (False, True):
        # the last two have more tiles than SMs: a persistent variant's CTAs take several each
        for Sq, Sk, Hq in ((130, 77, 2), (400, 701, 2), (333, 5000, 2), (1100, 1037, 32), (1500, 300, 32)):
            q = torch.randn(1, Sq, Hq, D, device="cuda", dtype=torch.bfloat16)
            k = torch.randn(1, Sk, 1, D, device="cuda", dtype=torch.bfloat16)
            v = torch.randn(1, Sk, 1, D, device="cuda", dtype=torch.bfloat16)
            print(f"case D={D} causal={causal} Sq={Sq} Sk={Sk} Hq={Hq}", flush=True)   # errors follow their case
            out, lse = hopper.forward(q, k, v, D ** -0.5, causal, Sk - Sq)
            torch.cuda.synchronize()
print("sanitize grid done")
