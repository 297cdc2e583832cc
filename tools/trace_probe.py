"""Per-tile timelines of the forward or backward kernel at one shape: where a tile's time goes.

Builds the kernels with FA3LITE_TRACE (cuda_src/attention/trace.cuh: %globaltimer at marked events,
the SM id and the block count per tile), runs one call, reads the table back and
prints one JSON line: the kernel's span, the mean phases of a unit, a least-squares fit of a unit's
loop time against its block count (fixed + per block), per SM the time no unit of the kernel ran
on it (before the first, between units, after the last), and per counted wait site (trace.cuh wait:
the mainloops' load waits and the producer's free-stage wait) the share of waits that found the
data not yet landed.

    python3 tools/trace_probe.py --mode bwd --head-dim 64 --causal 1 --seqlen 1k [--varlen] [--out table.npy]

--varlen runs the same batch packed, through flash_attn_varlen_func (every sequence of the same
length), so its units compare with the fixed-length kernel's one for one.

Shapes as the bench's: bf16, 16k tokens a batch, width 2048. The traced build is a separate
variant (its own cache entry); it adds one global store per event and, per counted wait, a probe
and reductions, which slow the kernel (forward 1.1-1.2x, backward ~1.5x: compare timelines and
shares only between traced runs).
"""
import argparse
import dataclasses
import json

import numpy as np
import torch

import fa3lite
from fa3lite import variants
from fa3lite.bench.grid import parse_seqlen
from fa3lite.hopper import bwd as hbwd
from fa3lite.runtime import launch
from fa3lite.runtime.driver import check, on_device

TOKENS, WIDTH = 16384, 2048
EVENTS = 8   # trace.cuh kEvents
WAIT_SITES, WAIT_WARPS, WAIT_SLOTS = 3, 16, 3   # trace.cuh kWaitSites, kWaitWarps, kWaitSlots
# Counted wait sites (trace.cuh wait) per kernel; the forward's are those of the overlapped mainloop.
WAIT_NAMES = {"bwd": {0: "consumer_q_full", 1: "consumer_do_full", 2: "producer_empty"},
              "fwd": {0: "consumer_k_full", 1: "consumer_v_full", 2: "producer_kv_empty"}}
# Event slots per kernel (trace.cuh slot 0 is the SM id and block count).
NAMES = {
    "fwd": {1: "tile_start", 2: "q_ready", 3: "loop_end", 4: "epilogue_end", 5: "cta_start", 6: "maps_ready"},
    "bwd": {1: "tile_start", 2: "first_q_ready", 3: "wg0_loop_end", 4: "wg0_end", 5: "writer_end",
            6: "first_block_end", 7: "wg1_end"},
}


def traced(spec_fn):
    def spec(self):
        s = spec_fn(self)
        return dataclasses.replace(s, defines=s.defines + (("FA3LITE_TRACE", "1"),))
    return spec


def trace_table(kernel_name: str, symbol: bytes = b"fa3lite_trace"):
    """(device pointer, bytes) of ``symbol`` in the loaded module that holds ``kernel_name``."""
    from cuda.bindings import driver

    for module in launch._modules:
        err, _ = driver.cuModuleGetFunction(module, kernel_name.encode())
        if int(err) != 0:
            continue
        err, ptr, size = driver.cuModuleGetGlobal(module, symbol)
        if int(err) == 0:
            return ptr, size
    raise RuntimeError(f"no traced module holds {kernel_name}")


def read_table(ptr, size, width: int = EVENTS) -> np.ndarray:
    from cuda.bindings import driver

    host = np.zeros(size // 8, dtype=np.uint64)
    with on_device(0):
        check(driver.cuMemcpyDtoH(host.ctypes.data, ptr, size))
    return host.reshape(-1, width)


def analyse_waits(counts: np.ndarray, mode: str) -> dict:
    """Per wait site, summed over units: waits made (by each warp's lane 0), the share that found the
    phase still open, and the mean SM cycles such a wait took."""
    counts = counts.reshape(-1, WAIT_SITES, WAIT_WARPS, WAIT_SLOTS).sum(axis=(0, 2)).astype(np.float64)
    out = {}
    for site, name in WAIT_NAMES[mode].items():
        made, late, cycles = counts[site]
        out[name] = {"waits": int(made), "open_share": late / made if made else 0.0,
                     "cycles_per_open_wait": cycles / late if late else 0.0,
                     "cycles_per_wait": cycles / made if made else 0.0}
    return out


def clear_table(ptr, size):
    from cuda.bindings import driver

    with on_device(0):
        check(driver.cuMemsetD8(ptr, 0, size))


def analyse(rows: np.ndarray, mode: str) -> dict:
    used = rows[(rows[:, 1:] != 0).any(axis=1)]
    sm = (used[:, 0] & 0xFFFFFFFF).astype(np.int64)
    blocks = (used[:, 0] >> 32).astype(np.int64)
    t = used[:, 1:].astype(np.float64)
    t[t == 0] = np.nan
    t0 = np.nanmin(t)
    t = (t - t0) / 1000.0                       # us since the kernel's first event
    ev = {name: t[:, slot - 1] for slot, name in NAMES[mode].items()}
    if mode == "bwd":
        start, first, loop_end = ev["tile_start"], ev["first_q_ready"], ev["wg0_loop_end"]
        end = np.nanmax(np.stack([ev["wg0_end"], ev["wg1_end"], ev["writer_end"]]), axis=0)
        phases = {"tile_start_to_first_q": first - start, "first_block": ev["first_block_end"] - first,
                  "loop": loop_end - first, "wg0_epilogue": ev["wg0_end"] - loop_end,
                  "after_wg0": end - ev["wg0_end"], "writer_after_wg0": ev["writer_end"] - ev["wg0_end"]}
    else:
        start, first, loop_end = ev["tile_start"], ev["q_ready"], ev["loop_end"]
        end = ev["epilogue_end"]
        phases = {"tile_start_to_q": first - start, "loop": loop_end - first, "epilogue": end - loop_end}
    out = {"units": int(len(used)), "sms": int(len(np.unique(sm))), "span_us": float(np.nanmax(end)),
           "mean_blocks": float(blocks.mean())}
    out["phase_mean_us"] = {k: float(np.nanmean(v)) for k, v in phases.items()}
    ok = np.isfinite(first) & np.isfinite(loop_end) & (blocks > 0)
    if ok.sum() > 2 and len(np.unique(blocks[ok])) > 1:
        slope, icept = np.polyfit(blocks[ok], (loop_end - first)[ok], 1)
        out["loop_fit_us"] = {"per_block": float(slope), "fixed": float(icept)}
    per_block = {}
    for n in np.unique(blocks):
        sel = blocks == n
        per_block[int(n)] = {"units": int(sel.sum()), "loop": float(np.nanmean((loop_end - first)[sel])),
                             "total": float(np.nanmean((end - start)[sel]))}
    out["by_blocks"] = per_block
    # SM idle: per SM, the span minus the union of its units' [start, end] intervals.
    idle, before, after, gaps = [], [], [], []
    span = float(np.nanmax(end))
    for s in np.unique(sm):
        sel = sm == s
        iv = sorted(zip(start[sel], end[sel]))
        busy, cur_s, cur_e = 0.0, None, None
        for a, b in iv:
            if cur_e is None or a > cur_e:
                if cur_e is not None:
                    busy += cur_e - cur_s
                    gaps.append(a - cur_e)
                cur_s, cur_e = a, b
            else:
                cur_e = max(cur_e, b)
        busy += cur_e - cur_s
        idle.append(span - busy)
        before.append(iv[0][0])
        after.append(span - max(b for _, b in iv))
    out["sm_idle_mean_us"] = float(np.mean(idle))
    out["sm_idle_before_first_us"] = float(np.mean(before))
    out["sm_idle_after_last_us"] = float(np.mean(after))
    out["gap_between_units_us"] = {"mean": float(np.mean(gaps)) if gaps else 0.0, "count": len(gaps),
                                   "p50": float(np.median(gaps)) if gaps else 0.0}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("fwd", "bwd"), default="bwd")
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--causal", type=int, default=1)
    ap.add_argument("--seqlen", default="1k")
    ap.add_argument("--varlen", action="store_true", help="the batch packed, through flash_attn_varlen_func")
    ap.add_argument("--out", default=None, help="also save the raw table (.npy) here")
    a = ap.parse_args()
    variants.FwdVariant.spec = traced(variants.FwdVariant.spec)
    hbwd.BwdVariant.spec = traced(hbwd.BwdVariant.spec)

    s, d, causal = parse_seqlen(a.seqlen), a.head_dim, bool(a.causal)
    h, b = WIDTH // d, TOKENS // s
    gen = torch.Generator(device="cuda").manual_seed(0)
    q, k, v, do = (torch.randn((b, s, h, d), device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(4))
    if a.varlen:
        q, k, v, do = (x.view(b * s, h, d) for x in (q, k, v, do))
    leaves = [x.detach().requires_grad_(a.mode == "bwd") for x in (q, k, v)]
    cu = torch.arange(0, (b + 1) * s, s, dtype=torch.int32, device="cuda")

    def forward():
        if a.varlen:
            return fa3lite.flash_attn_varlen_func(*leaves, cu, cu, s, s, causal=causal, backend="fa3lite")
        return fa3lite.flash_attn_func(*leaves, causal=causal, backend="fa3lite")

    def call():
        if a.mode == "fwd":
            with torch.no_grad():
                forward()
        else:
            torch.autograd.grad(out, leaves, do, retain_graph=True)

    out = forward()
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    kernel = "fa3lite_fwd" if a.mode == "fwd" else "fa3lite_bwd"
    ptr, size = trace_table(kernel)
    wptr, wsize = trace_table(kernel, b"fa3lite_waits")
    starts, ends = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    clear_table(ptr, size)
    clear_table(wptr, wsize)
    torch.cuda.synchronize()
    starts.record()
    call()
    ends.record()
    torch.cuda.synchronize()
    rows = read_table(ptr, size)
    if a.out:
        np.save(a.out, rows)
    res = {"mode": a.mode, "d": d, "causal": causal, "S": s, "varlen": a.varlen, "call_ms": starts.elapsed_time(ends)}
    res.update(analyse(rows, a.mode))
    res["waits"] = analyse_waits(read_table(wptr, wsize, WAIT_SITES * WAIT_WARPS * WAIT_SLOTS), a.mode)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
