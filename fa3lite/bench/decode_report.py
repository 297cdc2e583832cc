"""The decode rows in results.json and their section of table.txt (a --decode run).

Per timed row: K/V GB/s (decode_cases: K and V bytes only, over the median time), its fraction of
the run's copy bandwidth (bytes read + written by a device-to-device copy), and the speedup over the
SDPA baseline on the same case (SDPA's ms / the row's ms). fa3lite's rows without append also get
the speedup over the best peer that ran the case (the fastest of SDPA, cuDNN and FA4).
"""
from __future__ import annotations

from collections import defaultdict

from .decode_cases import BANDWIDTH_BAR_CACHE, BANDWIDTH_BAR_FRACTION, PEER_BAR
from .decode_impls import BASELINE, DECODE_FA3LITE_IMPLS, FA3LITE
from .results import ABSENT, OK, STATUS_WORDS, BenchRun, decode_row

COL_WIDTH = 14


def copy_fraction(gbs: float | None, copy_bandwidth_gbs: float | None) -> float | None:
    """gbs over the copy bandwidth; None when either is unknown."""
    if gbs is None or not copy_bandwidth_gbs:
        return None
    return gbs / copy_bandwidth_gbs


def decode_ratios(run: BenchRun) -> dict:
    """{index in run.decode: (speedup_vs_sdpa, speedup_vs_best_peer)} of the timed rows: the SDPA
    baseline's median over the row's (None where SDPA was not timed) and, for fa3lite's row without
    append, the fastest peer's median over its own (None elsewhere, or when no peer was timed)."""
    sdpa, best_peer = {}, {}
    for m in run.decode:
        if m.status != OK:
            continue
        if m.impl == BASELINE:
            sdpa[m.case] = m.stats.median
        if m.impl not in DECODE_FA3LITE_IMPLS:
            best_peer[m.case] = min(best_peer.get(m.case, m.stats.median), m.stats.median)
    out = {}
    for n, m in enumerate(run.decode):
        if m.status != OK:
            continue
        base = sdpa.get(m.case)
        peer = best_peer.get(m.case) if m.impl == FA3LITE else None
        out[n] = (base / m.stats.median if base else None, peer / m.stats.median if peer else None)
    return out


def decode_rows(run: BenchRun) -> list[dict]:
    """One dict per decode measurement: results.decode_row plus copy_fraction, speedup_vs_sdpa and
    speedup_vs_best_peer."""
    r = decode_ratios(run)
    out = []
    for n, m in enumerate(run.decode):
        row = decode_row(m)
        row["copy_fraction"] = copy_fraction(m.gbs, run.copy_bandwidth_gbs)
        row["speedup_vs_sdpa"], row["speedup_vs_best_peer"] = r.get(n, (None, None))
        out.append(row)
    return out


def _cell(m, copy_bw) -> str:
    """'ms fraction%' of a timed row (ms alone without a copy bandwidth), else its status word."""
    if m is None:
        return "-"
    if m.status != OK:
        return STATUS_WORDS[m.status]
    ms = m.stats.median
    ms_text = f"{ms:.3f}" if ms < 10 else f"{ms:.1f}"
    frac = copy_fraction(m.gbs, copy_bw)
    return f"{ms_text} {frac * 100:.0f}%" if frac is not None else ms_text


def _ratio(value) -> str:
    return f"{value:.2f}x" if value is not None else "-"


def format_decode(run: BenchRun, labels: dict[str, str]) -> str:
    """The decode table: one row per case, per implementation its median ms and fraction of the copy
    bandwidth (or a status word), then fa3lite's GB/s and speedups; below it, the bars' tally and why
    an implementation was not timed where."""
    seen = list(dict.fromkeys(m.impl for m in run.decode))
    order = [n for n in labels if n in seen] + [n for n in seen if n not in labels]
    copy_bw = run.copy_bandwidth_gbs
    ratios = decode_ratios(run)
    by_key, mine = {}, {}
    for n, m in enumerate(run.decode):
        by_key[(m.impl, m.case)] = m
        if m.impl == FA3LITE and m.status == OK:
            mine[m.case] = (m, *ratios.get(n, (None, None)))
    copy_text = f"{copy_bw:.0f} GB/s" if copy_bw else "not measured"
    lines = [
        f"Decode: median ms and K/V bandwidth as a fraction of the copy bandwidth ({copy_text}: bytes read + "
        "written by a device-to-device copy);",
        "  K/V bytes = B * L * Hk * d * 2 (K, V) * 2 bytes, q/out not counted; no grad; causal bottom-right; "
        "cache_seqlens = L in every row;",
        f"  vs SDPA / vs peer: {labels.get(FA3LITE, FA3LITE)}'s speedup over the SDPA baseline / the fastest "
        "peer that ran (SDPA, cuDNN, FA4); a paged SDPA call includes its gather of the pages",
    ]
    width = max([COL_WIDTH] + [len(labels.get(n, n)) for n in order])
    head = (f"{'Sq':>2} {'B':>3} {'cache':>6} {'Hq/Hk':>5} {'layout':<10} |"
            + "".join(f" {labels.get(n, n):>{width}}" for n in order)
            + f" | {'GB/s':>6} {'vs SDPA':>7} {'vs peer':>7}")
    lines += [head, "-" * len(head)]
    previous = None
    for case in dict.fromkeys(m.case for m in run.decode):
        group = (case.sq, case.heads_q, case.heads_kv, case.batch)
        if previous is not None and previous != group:
            lines.append("")
        previous = group
        cells = "".join(f" {_cell(by_key.get((n, case)), copy_bw):>{width}}" for n in order)
        m, vs_sdpa, vs_peer = mine.get(case, (None, None, None))
        gbs = f"{m.gbs:.0f}" if m is not None else "-"
        lines.append(f"{case.sq:>2} {case.batch:>3} {case.cache_len:>6} {case.heads_q:>2}/{case.heads_kv:<2} "
                     f"{case.layout:<10} |{cells} | {gbs:>6} {_ratio(vs_sdpa):>7} {_ratio(vs_peer):>7}")
    lines.append(_bars(mine, copy_bw))
    lines += _untimed(run, labels)
    return "\n".join(lines)


def _bars(mine: dict, copy_bw) -> str:
    """The issue's bars over fa3lite's timed rows at caches of at least BANDWIDTH_BAR_CACHE."""
    long = {case: v for case, v in mine.items() if case.cache_len >= BANDWIDTH_BAR_CACHE}
    fracs = [copy_fraction(m.gbs, copy_bw) for m, _, _ in long.values()]
    fast = [f for f in fracs if f is not None and f >= BANDWIDTH_BAR_FRACTION]
    peers = [p for _, _, p in long.values() if p is not None]
    bandwidth = (f"{len(fast)} of {len(long)} reach {BANDWIDTH_BAR_FRACTION:.0%} of the copy bandwidth"
                 if copy_bw else "no copy bandwidth measured")
    return (f"fa3lite at caches >= {BANDWIDTH_BAR_CACHE}: {bandwidth}; "
            f"{sum(p >= PEER_BAR for p in peers)} of {len(peers)} with a peer are >= {PEER_BAR}x the fastest one")


def _untimed(run: BenchRun, labels: dict[str, str]) -> list[str]:
    """Why an implementation was not timed, grouped by (impl, status, reason)."""
    groups = defaultdict(list)
    for m in run.decode:
        if m.status not in (OK, ABSENT):
            groups[(m.impl, m.status, m.reason)].append(m.case.label)
    lines = ["Decode rows not timed:"] if groups else []
    for (impl, status, reason), where in groups.items():
        shown = ", ".join(where[:3]) + (f" (+{len(where) - 3} more)" if len(where) > 3 else "")
        lines.append(f"  {labels.get(impl, impl)} {STATUS_WORDS[status]} at {shown}: {reason}")
    return lines
