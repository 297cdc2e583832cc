"""Where the varlen backward loses against the dense kernel at equal tokens: the bench's mixed
lengths vs equal lengths, with max_seqlen exact or padded to the longest mixed length (the padded
grid's empty CTAs alone). Backward alone (autograd.grad, graph kept), TFLOP/s medians of 5x20."""
import json
import statistics
import torch
from fa3lite import flash_attn_func, flash_attn_varlen_func
from fa3lite.bench.flops import band_flops

MIXED = (3970, 2089, 3616, 2234, 677, 1572, 2226)
EQUAL = (2341,) * 7


def timed(call, flops):
    call()
    torch.cuda.synchronize()
    runs = []
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(20):
            call()
        b.record()
        b.synchronize()
        runs.append(flops * 20 / (a.elapsed_time(b) * 1e-3) / 1e12)
    return round(statistics.median(runs), 1)


for mode in ("bwd", "fwd"):
    for d in (64, 128):
        h = 2048 // d
        for causal in (False, True):
            row = {"mode": mode, "d": d, "causal": causal}
            for name, lengths, max_len in (("dense", EQUAL, None), ("equal", EQUAL, 2341), ("equal_pad", EQUAL, 3970),
                                           ("mixed", MIXED, 3970)):
                total = sum(lengths)
                if max_len is None:
                    q, k, v = (torch.randn(7, 2341, h, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                               for _ in range(3))
                    fwd = lambda: flash_attn_func(q, k, v, causal=causal)  # noqa: E731
                else:
                    cu = torch.tensor((0,) + lengths, dtype=torch.int64).cumsum(0).to("cuda", torch.int32)
                    q, k, v = (torch.randn(total, h, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                               for _ in range(3))
                    fwd = lambda: flash_attn_varlen_func(q, k, v, cu, cu, max_len, max_len, causal=causal)  # noqa: E731
                if mode == "bwd":
                    out = fwd()
                    dout = torch.randn_like(out)
                    call = lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)  # noqa: E731
                else:
                    call = fwd
                row[name] = timed(call, band_flops(lengths, h, d, causal, (-1, -1), mode))
            print(json.dumps(row), flush=True)
