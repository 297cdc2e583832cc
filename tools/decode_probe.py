"""Decode probes for issue 13 (device only): how the split count moves a decode step's kernel time, and
where a call's host time goes.

  python tools/decode_probe.py sweep [--out f.json] [--shapes 1x1024,...]
                                                      kernel time per num_splits (CUDA graph replays)
  python tools/decode_probe.py host                   cProfile of back-to-back calls, top functions
  python tools/decode_probe.py pack [--out f.json]    speculative steps (Sq=4, causal): packed GQA vs not
  python tools/decode_probe.py paged [--out f.json]   paged caches read in place vs gathered (Sq=1)
  python tools/decode_probe.py timeline [--out f.json] [--sq N] [--shapes 8x1024,...]
                                                      each kernel of a step and where it starts
                                                      (CUDA-graph replays under torch.profiler), fa3lite
                                                      beside SDPA
  python tools/decode_probe.py trace [--out f.json]   the split kernel's per-CTA events (traced build;
                                                      run it in its own process)

sweep: flash_attn_with_kvcache, Sq=1, Hq/Hk=32/8, d=128, bf16, contiguous cache full to L, for each
(B, L) and num_splits in SPLITS plus 0 (the heuristic's pick, hopper/splits.py); each call captured
in a CUDA graph over enough cache copies to exceed L2, so the figure is the GPU's time per call
without host gaps. Reports ms and K/V GB/s (B * L * Hk * d * 2 tensors * 2 bytes / time).
"""
from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time

import torch

import fa3lite
from fa3lite.hopper import splits as split_rule

HQ, HK, D = 32, 8, 128
SHAPES = ((1, 8192), (1, 32768), (1, 131072), (8, 8192), (8, 131072), (64, 8192), (64, 32768))
SPLITS = (1, 2, 4, 8, 16, 24, 32, 48, 64, 128)
L2_BYTES = 50 * 2 ** 20
ROTATE_BYTES = 4 * L2_BYTES
REPLAYS = 20


def _caches(b, length, sets, sq=1):
    kv = [(torch.randn(b, length, HK, D, device="cuda", dtype=torch.bfloat16),
           torch.randn(b, length, HK, D, device="cuda", dtype=torch.bfloat16)) for _ in range(sets)]
    q = torch.randn(b, sq, HQ, D, device="cuda", dtype=torch.bfloat16)
    return q, kv


def _captured(fn, replays=1):
    """fn run once (compiles, plans), then captured in a CUDA graph and replayed `replays` times."""
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    for _ in range(replays):
        graph.replay()
    torch.cuda.synchronize()
    return graph


def _graph_ms(fn, calls):
    graph = _captured(fn)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(REPLAYS):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / calls)
    times.sort()
    return times[len(times) // 2]


def _contiguous_rows(sq, variants, extra=lambda b, length: {}, shapes=SHAPES):
    """For each (B, L) of ``shapes``: q of sq rows, caches full to L rotated past L2, and each variant
    (label, flash_attn_with_kvcache keywords) timed from graph replays; rows for the JSON file."""
    rows = []
    for b, length in shapes:
        kv_bytes = b * length * HK * D * 2 * 2
        q, kv = _caches(b, length, max(1, -(-ROTATE_BYTES // kv_bytes)), sq)
        seqlens = torch.full((b,), length, dtype=torch.int32, device="cuda")
        result = {"B": b, "L": length, "sq": sq, "kv_bytes": kv_bytes, "ms": {}, **extra(b, length)}
        for label, kwargs in variants:
            def calls(kwargs=kwargs):
                for kc, vc in kv:
                    fa3lite.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=seqlens, causal=True, **kwargs)
            ms = result["ms"][label] = _graph_ms(calls, len(kv))
            print(f"Sq={sq} B={b:3d} L={length:6d} {label:>10}: {ms * 1e3:8.1f} us  {kv_bytes / ms / 1e6:7.0f} GB/s",
                  flush=True)
        rows.append(result)
        del kv
        torch.cuda.empty_cache()
    return rows


def _write(rows, out_path):
    if out_path:
        with open(out_path, "w") as f:
            json.dump(rows, f, indent=1)


def sweep(out_path, shapes=SHAPES):
    """Kernel time per num_splits (0: the heuristic, whose pick is recorded) of a decode step, for each
    (B, L) of ``shapes``."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count

    def heuristic(b, length):   # pack-GQA: one tile per K/V head
        return {"heuristic": split_rule.num_splits(b * HK, -(-length // 128), sms)}

    variants = [(f"splits={n}", {"num_splits": n}) for n in SPLITS] + [("heuristic", {"num_splits": 0})]
    _write(_contiguous_rows(1, variants, heuristic, shapes), out_path)


def pack(out_path, sq=4):
    """Kernel time of a causal step of sq query rows with the group's heads packed (default) and not."""
    _write(_contiguous_rows(sq, [("unpacked", {"pack_gqa": False}), ("packed", {"pack_gqa": None})]), out_path)


PAGED_SHAPES = ((1, 131072), (8, 32768), (64, 8192))
PAGE_SIZES = (16, 64, 256)


def paged(out_path):
    """Kernel time of a decode step on a paged cache (pages in shuffled order), read in place by the
    split kernel (the default) and gathered into a contiguous cache first (what the call did before)."""
    rows = []
    for b, length in PAGED_SHAPES:
        kv_bytes = b * length * HK * D * 2 * 2
        q = torch.randn(b, 1, HQ, D, device="cuda", dtype=torch.bfloat16)
        seqlens = torch.full((b,), length, dtype=torch.int32, device="cuda")
        for page in PAGE_SIZES:
            pages = length // page
            sets = max(1, -(-ROTATE_BYTES // kv_bytes))
            pools = [tuple(torch.randn(b * pages, page, HK, D, device="cuda", dtype=torch.bfloat16) for _ in range(2))
                     for _ in range(sets)]
            table = torch.randperm(b * pages, device="cuda").view(b, pages).to(torch.int32)

            def in_place():
                for kc, vc in pools:
                    fa3lite.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=seqlens, page_table=table, causal=True)

            def gathered():
                for kc, vc in pools:
                    kg, vg = (c[table.long()].flatten(1, 2) for c in (kc, vc))
                    fa3lite.flash_attn_with_kvcache(q, kg, vg, cache_seqlens=seqlens, causal=True)
            result = {"B": b, "L": length, "page": page, "kv_bytes": kv_bytes}
            for name, fn in (("in_place", in_place), ("gathered", gathered)):
                ms = _graph_ms(fn, len(pools))
                result[name] = ms
                print(f"B={b:3d} L={length:6d} page={page:3d} {name:9s}: {ms * 1e3:8.1f} us "
                      f"{kv_bytes / ms / 1e6:7.0f} GB/s", flush=True)
            rows.append(result)
            del pools
            torch.cuda.empty_cache()
    _write(rows, out_path)


def host():
    for b, length, s_new in ((1, 1024, 0), (1, 1024, 1), (8, 8192, 0)):
        q, kv = _caches(b, length, 1)
        kc, vc = kv[0]
        seqlens = torch.full((b,), length - s_new, dtype=torch.int32, device="cuda")
        new = [torch.randn(b, s_new, HK, D, device="cuda", dtype=torch.bfloat16) for _ in range(2)] if s_new else [None] * 2

        def call():
            return fa3lite.flash_attn_with_kvcache(q, kc, vc, new[0], new[1], cache_seqlens=seqlens, causal=True)

        for _ in range(50):
            call()
        torch.cuda.synchronize()
        n = 2000
        t0 = time.perf_counter()
        for _ in range(n):
            call()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        print(f"\n== B={b} L={length} s_new={s_new}: {(t1 - t0) / n * 1e6:.1f} us host per call (back to back), "
              f"{(t2 - t0) / n * 1e6:.1f} us wall")
        _eager_kernels(call)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(500):
            call()
        prof.disable()
        torch.cuda.synchronize()
        pstats.Stats(prof).sort_stats("tottime").print_stats(22)


def host_split():
    """Host microseconds of each stage of a repeated decode step with one appended row (B=1, 1k),
    every stage timed alone back to back (2000 calls, median of 5 interleaved rounds, no grad): the
    whole call, the call key, the append launch, torch's add that seqused_k took before the append
    kernel wrote it, the rows (layout.inputs with the append), the split + combine launches,
    torch.no_grad()."""
    from fa3lite import callkey

    b, length = 1, 1024
    q, kv = _caches(b, length, 1)
    kc, vc = kv[0]
    seqlens = torch.full((b,), length - 1, dtype=torch.int32, device="cuda")
    k_new, v_new = (torch.randn(b, 1, HK, D, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    args = (q, kc, vc, k_new, v_new, None, None, seqlens, None, None, None)

    def call():
        return fa3lite.flash_attn_with_kvcache(q, kc, vc, k_new, v_new, cache_seqlens=seqlens, causal=True)

    for _ in range(5):
        call()
    torch.cuda.synchronize()
    key = callkey.kvcache_key(*args, None, True, (-1, -1), 0.0, True, 0, None, False, "auto")
    plan = callkey.find(key)
    rows = plan.layout.inputs(*args, appender=plan._append, alias=True)
    no_grad = torch.no_grad()

    def grad_off():
        with no_grad:
            pass

    stages = {
        "whole call": call,
        "kvcache_key + find": lambda: callkey.find(callkey.kvcache_key(*args, None, True, (-1, -1), 0.0, True, 0,
                                                                        None, False, "auto")),
        "torch.no_grad enter/exit": grad_off,
        "layout.inputs (with the append launch)": lambda: plan.layout.inputs(
            *args, appender=plan._append, alias=True),
        "append launch alone": lambda: plan.appends(kc, vc, k_new, v_new, seqlens, None, None),
        "seqlens + 1 (int32)": lambda: seqlens + 1,
        "split + combine launches (plan.kernel)": lambda: plan.kernel(rows.q, rows.k, rows.v, rows.cu_q, rows.cu_k,
                                                                      None, rows.used_k, None),
        "layout.outputs": lambda: plan.layout.outputs(rows.q, None, True),
        "torch.empty_like(seqlens)": lambda: torch.empty_like(seqlens),
    }
    used = rows.used_k

    def pair(*fns):
        def run():
            for fn in fns:
                fn()
        return run

    append = stages["append launch alone"]
    add = stages["seqlens + 1 (int32)"]
    split = lambda: plan.kernel(rows.q, rows.k, rows.v, rows.cu_q, rows.cu_k, None, used, None)  # noqa: E731
    fill = lambda: used.fill_(length)  # noqa: E731
    stages.update({
        "append + split": pair(append, split),
        "add + split": pair(add, split),
        "fill_ + split": pair(fill, split),
        "add + append": pair(add, append),
        "add + append + split": pair(add, append, split),
        "append + add + split": pair(append, add, split),
    })
    from host_profile import _interleaved   # tools/ is the script's folder, first on sys.path

    medians = _interleaved({name: (fn, False, None) for name, fn in stages.items()}, calls=2000, rounds=5)
    for name, us in medians.items():
        print(f"{us:8.2f} us  {name}")
    _instrumented(call, plan)


def _instrumented(call, plan, n: int = 2000):
    """The whole decode call with the time spent inside its parts summed (each wrapped in a timer), and
    once more with Python's garbage collector off."""
    import gc

    from fa3lite import callkey, kvcache

    spent: dict[str, float] = {}

    def timed(name, fn):
        def run(*a, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - t0
        return run

    saved = (callkey.kvcache_key, kvcache._key_rows, plan.kernel, plan.appends)
    layout_inputs = type(plan.layout).inputs
    callkey.kvcache_key = timed("kvcache_key", saved[0])
    kvcache._key_rows = timed("_key_rows", saved[1])
    plan.kernel = timed("split + combine launches", saved[2])
    plan.appends = timed("append launch", saved[3])
    type(plan.layout).inputs = timed("layout.inputs (all)", layout_inputs)
    try:
        for _ in range(20):
            call()
        torch.cuda.synchronize()
        spent.clear()
        t0 = time.perf_counter()
        for _ in range(n):
            call()
        total = time.perf_counter() - t0
        torch.cuda.synchronize()
    finally:
        callkey.kvcache_key, kvcache._key_rows, plan.kernel, plan.appends = saved
        type(plan.layout).inputs = layout_inputs
    print(f"instrumented whole call {total / n * 1e6:.2f} us; inside it:")
    for name, t in spent.items():
        print(f"{t / n * 1e6:8.2f} us  {name}")
    for collect in (True, False):
        if not collect:
            gc.disable()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            call()
        print(f"whole call, gc {'on' if collect else 'off'}: {(time.perf_counter() - t0) / n * 1e6:.2f} us")
        torch.cuda.synchronize()
    gc.enable()


def _eager_kernels(call, calls: int = 50):
    """Each kernel of ``calls`` eager calls issued back to back (torch.profiler): name, count per call,
    mean duration; and the GPU's busy time per call against the span, so a step that the GPU (not
    the host) paces shows up."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            call()
        torch.cuda.synchronize()
    ev = sorted((e.start_ns(), e.duration_ns(), e.name()) for e in prof.profiler.kineto_results.events()
                if e.device_type() == torch.autograd.DeviceType.CUDA)
    by_name: dict[str, list[int]] = {}
    for _, dur, name in ev:
        by_name.setdefault(name[:80], []).append(dur)
    for name, durs in by_name.items():
        print(f"   {len(durs) / calls:4.1f} x {sum(durs) / len(durs) / 1e3:7.2f} us  {name}")
    if ev:
        span = (ev[-1][0] + ev[-1][1] - ev[0][0]) / 1e3 / calls
        busy = sum(d for _, d, _ in ev) / 1e3 / calls
        print(f"   GPU busy {busy:.1f} us of a {span:.1f} us span per call")


TIMELINE_SHAPES = ((1, 1024), (1, 8192), (1, 32768), (8, 8192))
TIMELINE_CALLS = 16


def _graph_kernels(fn, calls):
    """Kernels of one replay of fn captured in a CUDA graph (fn makes `calls` steps): per step, each
    kernel's (name, start offset from the step's first kernel, duration) in us, and the step period."""
    from torch.profiler import ProfilerActivity, profile

    graph = _captured(fn, replays=3)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        graph.replay()
        torch.cuda.synchronize()
    ev = sorted((e.start_ns(), e.duration_ns(), e.name()) for e in prof.profiler.kineto_results.events()
                if e.device_type() == torch.autograd.DeviceType.CUDA)
    if not ev or len(ev) % calls:
        return {"events": len(ev), "error": "kernel count not a multiple of the steps"}
    per = len(ev) // calls
    steps = [ev[i * per:(i + 1) * per] for i in range(calls)]
    kernels = []
    for j in range(per):
        kernels.append({"name": steps[0][j][2][:90],
                        "start_us": sum((s[j][0] - s[0][0]) for s in steps) / calls / 1e3,
                        "dur_us": sum(s[j][1] for s in steps) / calls / 1e3})
    period = [(steps[i + 1][0][0] - steps[i][0][0]) / 1e3 for i in range(calls - 1)]
    return {"kernels": kernels, "period_us": sum(period) / len(period)}


def _trace_split(b, length):
    """Per-CTA events of the split kernel at one decode shape (a FA3LITE_TRACE build: trace_probe.py)."""
    import numpy as np
    import trace_probe

    q, kv = _caches(b, length, 1)
    seqlens = torch.full((b,), length, dtype=torch.int32, device="cuda")
    kc, vc = kv[0]

    def call():
        return fa3lite.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=seqlens, causal=True)

    for _ in range(3):
        call()
    torch.cuda.synchronize()
    ptr, size = trace_probe.trace_table("fa3lite_fwd")
    trace_probe.clear_table(ptr, size)
    torch.cuda.synchronize()
    call()
    torch.cuda.synchronize()
    rows = trace_probe.read_table(ptr, size)
    used = rows[(rows[:, 1:] != 0).any(axis=1)]
    t = used[:, 1:].astype(np.float64)
    t[t == 0] = np.nan
    t = (t - np.nanmin(t)) / 1e3
    names = {5: "cta_start", 6: "maps_ready", 1: "tile_start", 2: "q_ready", 3: "loop_end", 4: "epilogue_end"}
    out = {"B": b, "L": length, "ctas": int(len(used)),
           "blocks": sorted({int(x) for x in (used[:, 0] >> 32)})}
    for slot, name in names.items():
        col = t[:, slot - 1]
        if np.isfinite(col).any():
            out[name] = {"min": float(np.nanmin(col)), "mean": float(np.nanmean(col)), "max": float(np.nanmax(col))}
    return out


def timeline(out_path, sq=1, shapes=TIMELINE_SHAPES):
    """Each kernel of a step of sq query positions (fa3lite and SDPA; causal: each position sees the
    keys up to its own) from graph replays, for each (B, L) of ``shapes``."""
    import torch.nn.functional as F

    rows = []
    for b, length in shapes:
        q, kv = _caches(b, length, TIMELINE_CALLS, sq)
        seqlens = torch.full((b,), length, dtype=torch.int32, device="cuda")

        def ours():
            for kc, vc in kv:
                fa3lite.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=seqlens, causal=True)

        # the bottom-right causal mask of the step's positions, as SDPA takes it (sq = 1: none needed)
        mask = None if sq == 1 else (torch.arange(length, device="cuda")[None, :]
                                     <= torch.arange(length - sq, length, device="cuda")[:, None])

        def sdpa():
            for kc, vc in kv:
                F.scaled_dot_product_attention(q.transpose(1, 2), kc.transpose(1, 2), vc.transpose(1, 2),
                                               attn_mask=mask, enable_gqa=True).transpose(1, 2)

        for name, fn in (("fa3lite", ours), ("sdpa", sdpa)):
            r = {"B": b, "L": length, "sq": sq, "impl": name, **_graph_kernels(fn, len(kv))}
            print(json.dumps(r), flush=True)
            rows.append(r)
        del kv
        torch.cuda.empty_cache()
    _write(rows, out_path)


def trace(out_path):
    """The split kernel's per-CTA events at each TIMELINE_SHAPES shape (us from the first event)."""
    import trace_probe
    from fa3lite import variants
    variants.FwdVariant.spec = trace_probe.traced(variants.FwdVariant.spec)
    rows = []
    for b, length in TIMELINE_SHAPES:
        r = {"trace": _trace_split(b, length)}
        print(json.dumps(r), flush=True)
        rows.append(r)
    _write(rows, out_path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("sweep", "host", "host_split", "pack", "paged", "timeline", "trace"))
    ap.add_argument("--out")
    ap.add_argument("--sq", type=int, default=1, help="timeline: query positions per step")
    ap.add_argument("--shapes", help="sweep / timeline: B x L pairs, e.g. 8x1024,64x1024 (default SHAPES / "
                                     "TIMELINE_SHAPES)")
    args = ap.parse_args()
    picked = args.shapes and tuple(tuple(int(n) for n in pair.split("x")) for pair in args.shapes.split(","))
    {"sweep": lambda: sweep(args.out, picked or SHAPES), "host": host, "host_split": host_split,
     "pack": lambda: pack(args.out), "paged": lambda: paged(args.out),
     "timeline": lambda: timeline(args.out, args.sq, picked or TIMELINE_SHAPES),
     "trace": lambda: trace(args.out)}[args.what]()


if __name__ == "__main__":
    main()
