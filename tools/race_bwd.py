"""A few small backward calls for compute-sanitizer racecheck/memcheck (every backward layout:
D = 64 with 128-query steps, D = 128 narrow, D = 256 wide; both masks; default and deterministic;
an odd length so the last query block is partial; at D = 64 also a causal length past
hopper.bwd.SHORT_RING_M_BLOCKS query blocks, which runs the three-stage ring); then GQA (8 query heads
on 2 K/V heads) with the head walk forced at these small grids (hopper.bwd GROUPED_MIN_CTAS_PER_SM = 0:
one CTA sums a K/V head's group); then varlen batches with empty, one-row and odd sequences (the
preprocess writes each sequence's tensor maps, the main kernel acquires them), GQA's and at D = 64 also
MHA's (the persistent D = 64 kernels walk a varlen batch's tiles with or without the head walk; run with
FA3LITE_BWD_MAX_CTAS=2 so that a few CTAs walk them all). Checks every gradient is finite.
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool racecheck python3 tools/race_bwd.py
"""
import torch

from fa3lite import flash_attn_func, flash_attn_varlen_func
from fa3lite.hopper import bwd


def check(label, out, leaves):
    """The backward of out through leaves with a random dout; prints whether every gradient is finite."""
    grads = torch.autograd.grad(out, leaves, torch.randn_like(out))
    ok = all(bool(torch.isfinite(g).all()) for g in grads)
    print(f"{label}: {'ok' if ok else 'NOT FINITE'}", flush=True)


def call(d, causal, seqlen, deterministic, heads_q=2, heads_kv=2):
    q = torch.randn(1, seqlen, heads_q, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k, v = (torch.randn(1, seqlen, heads_kv, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            for _ in range(2))
    out = flash_attn_func(q, k, v, causal=causal, deterministic=deterministic, backend="fa3lite")
    check(f"d={d} causal={causal} S={seqlen} heads={heads_q}/{heads_kv} deterministic={deterministic}", out, (q, k, v))


def call_varlen(d, causal, lengths, heads_q=4, heads_kv=2):
    cu = torch.tensor((0,) + lengths, dtype=torch.int64).cumsum(0).to("cuda", torch.int32)
    total = sum(lengths)
    q, k, v = (torch.randn(total, h, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
               for h in (heads_q, heads_kv, heads_kv))
    out = flash_attn_varlen_func(q, k, v, cu, cu, max(lengths), max(lengths), causal=causal, backend="fa3lite")
    check(f"varlen d={d} causal={causal} lengths={lengths} heads={heads_q}/{heads_kv}", out, (q, k, v))


def main():
    torch.manual_seed(0)
    shapes = [(d, causal, 300) for d in (64, 128, 256) for causal in (False, True)] + [(64, True, 1300)]
    for d, causal, seqlen in shapes:
        for deterministic in (False, True):
            call(d, causal, seqlen, deterministic)
    bwd.GROUPED_MIN_CTAS_PER_SM = 0     # GQA plans made from here on walk the group whatever the grid
    for d in (64, 128, 256):
        for causal in (False, True):
            for deterministic in (False, True):
                call(d, causal, 300, deterministic, heads_q=8, heads_kv=2)
    for d in (64, 128, 256):
        for causal in (False, True):
            call_varlen(d, causal, (0, 1, 300, 129))
    for causal in (False, True):   # the D = 64 varlen backward walks tiles without the head walk too (MHA)
        call_varlen(64, causal, (0, 1, 300, 129), heads_q=4, heads_kv=4)


if __name__ == "__main__":
    main()
