"""Speed of the training features on the GPU: sliding windows, softcap and learnable sinks, forward and
forward+backward, fa3lite beside FlashAttention-4 (when importable) and beside fa3lite's own dense
path, TFLOP/s counted on the scores inside the band (the work a window leaves).

    python tools/feature_bench.py [--tokens 16384] [--width 2048] [--head-dims 64,128,256]
                                  [--cases dense,causal,...] [--varlen] [--out DIR]

--varlen times packed batches instead: sequences of random lengths between S/8 and S (a fixed seed)
filling --tokens, causal, through flash_attn_varlen_func (FA4's when importable), TFLOP/s on each
sequence's own causal FLOPs.

Implementations are timed in alternation, one configuration at a time (CUDA events, median of
--reps calls after --warmup), so the ratios compare within one machine state. Writes
feature_bench.json (every row) and prints a table.
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import torch

import fa3lite
from fa3lite.bench.flops import band_pairs

CASES = (   # (label, causal, window, softcap, sink)
    ("dense", False, (-1, -1), 0.0, False),
    ("causal", True, (-1, -1), 0.0, False),
    ("causal+window1024", True, (1024, -1), 0.0, False),
    ("window(512,512)", False, (512, 512), 0.0, False),
    ("causal+softcap30", True, (-1, -1), 30.0, False),
    ("causal+sink", True, (-1, -1), 0.0, True),
    ("causal+window1024+softcap+sink", True, (1024, -1), 30.0, True),
)


def fa4_call():
    try:
        from flash_attn.cute import flash_attn_func as fa4
    except Exception as exc:  # noqa: BLE001 - absent or broken: report and go on without it
        print(f"FA4 not timed: {type(exc).__name__}: {exc}")
        return None

    def call(q, k, v, causal, window, softcap, sink):
        win = tuple(None if w < 0 else w for w in window)
        out = fa4(q, k, v, causal=causal, window_size=win, softcap=softcap, learnable_sink=sink)
        return out[0] if isinstance(out, tuple) else out
    return call


def fa4_varlen_call():
    try:
        from flash_attn.cute import flash_attn_varlen_func as fa4
    except Exception as exc:  # noqa: BLE001 - absent or broken: report and go on without it
        print(f"FA4 varlen not timed: {type(exc).__name__}: {exc}")
        return None

    def call(q, k, v, cu, max_len):
        out = fa4(q, k, v, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=max_len, max_seqlen_k=max_len, causal=True)
        return out[0] if isinstance(out, tuple) else out
    return call


def ours_varlen(q, k, v, cu, max_len):
    return fa3lite.flash_attn_varlen_func(q, k, v, cu, cu, max_len, max_len, causal=True, backend="fa3lite")


def ours(q, k, v, causal, window, softcap, sink):
    return fa3lite.flash_attn_func(q, k, v, causal=causal, window_size=window, softcap=softcap,
                                   learnable_sink=sink, backend="fa3lite")


def timed(fn, reps: int, warmup: int) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--width", type=int, default=2048)
    ap.add_argument("--seqlens", default="4096,16384")
    ap.add_argument("--head-dims", default="64,128,256")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--cases", default=",".join(c[0] for c in CASES))
    ap.add_argument("--varlen", action="store_true")
    ap.add_argument("--out", type=Path, default=Path("."))
    args = ap.parse_args()
    if args.varlen:
        rows = varlen_rows(args)
        name = "feature_bench_varlen.json"
    else:
        rows = fixed_rows(args)
        name = "feature_bench.json"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / name).write_text(json.dumps(
        {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, indent=1))


def varlen_rows(args) -> list[dict]:
    impls = {"fa3lite": ours_varlen}
    fa4 = fa4_varlen_call()
    if fa4 is not None:
        impls["fa4"] = fa4
    rows = []
    gen = torch.Generator().manual_seed(0)
    for d in (int(x) for x in args.head_dims.split(",")):
        for s in (int(x) for x in args.seqlens.split(",")):
            lens = []
            while sum(lens) < args.tokens:
                lens.append(int(torch.randint(max(1, s // 8), s + 1, (1,), generator=gen)))
            cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int32, device="cuda")
            h, total = args.width // d, sum(lens)
            q, k, v = (torch.randn(total, h, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                       for _ in range(3))
            dout = torch.randn_like(q)
            flops = 4 * d * h * sum(band_pairs(n, n, True, (-1, -1)) for n in lens)
            row = {"d": d, "S_max": s, "sequences": len(lens), "tokens": total, "H": h, "case": "varlen causal"}
            for name, call in impls.items():
                row[name] = measure(lambda: call(q, k, v, cu, max(lens)), (q, k, v), dout, flops, args)
            rows.append(row)
            print_row(f"d={d:3d} S<={s:5d} {len(lens):3d} seqs varlen causal", row, impls)
    return rows


def measure(attend, leaves, dout, flops: int, args):
    """Times attend() (the forward, without grad) and attend() with the gradients of ``leaves``: a dict
    of milliseconds and TFLOP/s (forward+backward counted as 3.5 forwards), or the error text of a
    peer that does not run the case."""
    def fwd():
        with torch.no_grad():
            attend()

    def fwd_bwd():
        torch.autograd.grad(attend(), leaves, dout)
    try:
        f_ms, fb_ms = timed(fwd, args.reps, args.warmup), timed(fwd_bwd, args.reps, args.warmup)
    except Exception as exc:  # noqa: BLE001 - a peer without the feature: note it
        return f"{type(exc).__name__}: {str(exc)[:80]}"
    return {"fwd_ms": f_ms, "fwd_bwd_ms": fb_ms, "fwd_tflops": flops / f_ms / 1e9,
            "fwd_bwd_tflops": 3.5 * flops / fb_ms / 1e9}


def print_row(head: str, row: dict, impls) -> None:
    cells = []
    for name in impls:
        r = row.get(name)
        cells.append(f"{name} {r['fwd_tflops']:6.1f}/{r['fwd_bwd_tflops']:6.1f}" if isinstance(r, dict)
                     else f"{name} {r}")
    print(f"{head:48s} " + "  ".join(cells), flush=True)


def fixed_rows(args) -> list[dict]:
    impls = {"fa3lite": ours}
    fa4 = fa4_call()
    if fa4 is not None:
        impls["fa4"] = fa4
    rows = []
    for d in (int(x) for x in args.head_dims.split(",")):
        for s in (int(x) for x in args.seqlens.split(",")):
            b, h = max(1, args.tokens // s), args.width // d
            q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                       for _ in range(3))
            dout = torch.randn_like(q)
            for label, causal, window, softcap, sink_on in (c for c in CASES if c[0] in args.cases.split(",")):
                sink = torch.randn(h, device="cuda", requires_grad=True) if sink_on else None
                flops = 4 * d * band_pairs(s, s, causal, window) * b * h
                row = {"d": d, "S": s, "B": b, "H": h, "case": label}
                leaves = (q, k, v) + ((sink,) if sink is not None else ())
                for name, call in impls.items():
                    row[name] = measure(lambda: call(q, k, v, causal, window, softcap, sink), leaves, dout, flops,
                                        args)
                rows.append(row)
                print_row(f"d={d:3d} S={s:5d} {label}", row, impls)
    return rows


if __name__ == "__main__":
    main()
