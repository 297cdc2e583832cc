"""A few small backward calls for compute-sanitizer racecheck/memcheck (every backward layout:
D = 64 with 128-query steps, D = 128 narrow, D = 256 wide; both masks; default and deterministic;
an odd length so the last query block is partial; at D = 64 also a causal length past
hopper.bwd.SHORT_RING_M_BLOCKS query blocks, which runs the three-stage ring). Checks every gradient
is finite.
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool racecheck python3 tools/race_bwd.py
"""
import torch

from fa3lite import flash_attn_func


def main():
    torch.manual_seed(0)
    shapes = [(d, causal, 300) for d in (64, 128, 256) for causal in (False, True)] + [(64, True, 1300)]
    for d, causal, seqlen in shapes:
        for deterministic in (False, True):
            q, k, v = (torch.randn(1, seqlen, 2, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                       for _ in range(3))
            out = flash_attn_func(q, k, v, causal=causal, deterministic=deterministic, backend="fa3lite")
            grads = torch.autograd.grad(out, (q, k, v), torch.randn_like(out))
            ok = all(bool(torch.isfinite(g).all()) for g in grads)
            print(f"d={d} causal={causal} S={seqlen} deterministic={deterministic}: "
                  f"{'ok' if ok else 'NOT FINITE'}", flush=True)

if __name__ == "__main__":
    main()
