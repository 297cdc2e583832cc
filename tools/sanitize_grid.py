"""The GPU test grid's kernel variants and odd shapes, for compute-sanitizer (no reference math, so
the tools spend their time in fa3lite's kernels): every head dim, dtype, mask, head layout, strided
views, the backward with every gradient subset and in deterministic mode. Outputs are checked for
being written (NaN-poisoned buffers in the debug build) and finite where rows see a key.

    PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck python3 tools/sanitize_grid.py

--initcheck: initcheck does not track TMA stores (measured on an H100: every element of the forward's
TMA-stored O was reported as uninitialized when read, LSE written by plain stores was not, and O
matches the float64 reference in the stress run). So the backward is given O from the torch
fallback instead, and the forward's O is never read: what initcheck reports then is genuine.
"""
import itertools
import sys

import torch

from fa3lite import fallback, hopper
from fa3lite.hopper import bwd as hopper_bwd

PAIRS = [(1, 1), (1, 239), (239, 1), (113, 203), (130, 77), (300, 300)]
HEADS = [(4, 4), (4, 1)]
GRADS = [(True, True), (True, False), (False, True)]


def rand(*shape, dtype):
    return torch.randn(*shape, device="cuda", dtype=dtype)


def main(quick: bool, initcheck: bool) -> int:
    cases = 0
    pairs = PAIRS[3:5] if quick else PAIRS
    for d, dtype, causal, (sq, sk), (hq, hk) in itertools.product(
            hopper_bwd.HEAD_DIMS, (torch.bfloat16, torch.float16), (False, True), pairs, HEADS):
        packed = rand(2, max(sq, sk), 3, hq, d, dtype=dtype)          # strided views, as packed qkv
        q = packed[:, :sq, 0]
        k, v = packed[:, :sk, 1, :hk], packed[:, :sk, 2, :hk]
        scale, offset = d ** -0.5, sk - sq
        out, lse = hopper.forward(q, k, v, scale, causal, offset)
        if initcheck:
            out = fallback.forward(q, k, v, scale, causal, offset)[0]
        dout = torch.randn_like(out)
        for (need_dq, need_dkv), deterministic in itertools.product(GRADS, (False, True)):
            if deterministic and not need_dq:
                continue
            grads = hopper_bwd.backward(dout, q, k, v, out, lse, scale, causal, offset, deterministic,
                                        need_dq=need_dq, need_dkv=need_dkv)
            for name, g in zip(("dq", "dk", "dv"), grads):
                if g is not None and not torch.isfinite(g).all():
                    print(f"non-finite {name}: d={d} {dtype} causal={causal} {sq}x{sk} {hq}/{hk}")
                    return 1
            cases += 1
        torch.cuda.synchronize()
    print(f"sanitize grid done: {cases} backward cases")
    return 0


if __name__ == "__main__":
    sys.exit(main("--quick" in sys.argv, "--initcheck" in sys.argv))
