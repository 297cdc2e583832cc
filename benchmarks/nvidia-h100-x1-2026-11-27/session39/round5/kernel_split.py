"""GPU time per kernel of the varlen backward beside the dense one (torch.profiler, CUDA activity):
width 2048, bf16, D 128 / 256, full and causal, on the bench's packed batch (tools/varlen_ab.LENGTHS)
and on 7 x 2341 (the dense comparator's lengths). One line per (batch, d, mask, kind, kernel): us per
backward, averaged over --reps calls; the `all` line sums the kernels, `span` is the wall time of
the calls back to back (CUDA events)."""
import json
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, "tools")
from varlen_ab import LENGTHS  # noqa: E402

from fa3lite import flash_attn_func, flash_attn_varlen_func  # noqa: E402

REPS = 10


def grads(kind, lengths, d, causal):
    heads, total, n = 2048 // d, sum(lengths), len(lengths)
    mean = round(total / n)
    if kind == "varlen":
        cu = torch.tensor((0,) + tuple(lengths), dtype=torch.int64).cumsum(0).to("cuda", torch.int32)
        leaves = [torch.randn(total, heads, d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3)]
        out = flash_attn_varlen_func(*leaves, cu, cu, max(lengths), max(lengths), causal=causal)
    else:
        leaves = [torch.randn(n, mean, heads, d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3)]
        out = flash_attn_func(*leaves, causal=causal)
    dout = torch.randn_like(out)
    return lambda: torch.autograd.grad(out, leaves, dout, retain_graph=True)


for batch, lengths in (("bench", LENGTHS), ("equal", (2341,) * 7)):
    for d in (128, 256):
        for causal in (False, True):
            for kind in ("varlen", "dense"):
                call = grads(kind, lengths, d, causal)
                call()
                torch.cuda.synchronize()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    start.record()
                    for _ in range(REPS):
                        call()
                    end.record()
                    torch.cuda.synchronize()
                per = {}
                for e in prof.key_averages():
                    if e.device_type.name == "CUDA" and e.self_device_time_total > 0:
                        per[e.key] = per.get(e.key, 0.0) + e.self_device_time_total / REPS
                row = dict(batch=batch, d=d, causal=causal, kind=kind, span_us=round(start.elapsed_time(end) * 1000 / REPS, 1),
                           all_us=round(sum(per.values()), 1),
                           kernels={k[:60]: round(v, 1) for k, v in sorted(per.items(), key=lambda kv: -kv[1])})
                print(json.dumps(row), flush=True)
