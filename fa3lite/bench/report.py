"""Report writing: the terminal table, CSV and JSON (stdlib only).

Table cells read "TFLOP/s ratio" where ratio = TFLOP/s / cuDNN's TFLOP/s on the same cell and mode,
or a status word when the implementation was not timed there. The feature rows (feature_cases.py) get
their own table: TFLOP/s per implementation, fa3lite's ratio to the best peer that ran, and for
varlen fa3lite's ratio to its dense comparator; in results.json under "features" (not in the CSV).
A --decode run's table and rows come from decode_report.py ("decode" in results.json).
"""
from __future__ import annotations

import csv
import json
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path

from .decode_report import decode_rows, format_decode
from .feature_cases import DENSE, NO_WINDOW, VARLEN
from .impls import BASELINE, FA3LITE_IMPLS
from .results import ABSENT, OK, SKIPPED, STATUS_WORDS, BenchRun, feature_row, measurement_row

META_COLUMNS = ("device", "driver", "torch", "cuda", "cudnn", "fa3lite_commit", "fa3lite_source_hash")
CSV_COLUMNS = (
    "impl", "head_dim", "mask", "seqlen", "batch", "heads", "dtype", "mode", "status",
    "ms_median", "ms_p20", "ms_p80", "reps", "gflop", "tflops", "ratio_cudnn", "reason", "deterministic",
) + META_COLUMNS
COL_WIDTH = 11
MODE_LABELS = {"fwd": "fwd", "bwd": "bwd", "fwdbwd": "fwd+bwd"}


def ratios(run: BenchRun) -> dict:
    """{(impl, head_dim, causal, seqlen, mode): ratio to the baseline's TFLOP/s} where both are timed."""
    base = {
        (m.cell.head_dim, m.cell.causal, m.cell.seqlen, m.mode): m.tflops
        for m in run.measurements
        if m.impl == BASELINE and m.status == OK
    }
    out = {}
    for m in run.measurements:
        key = (m.cell.head_dim, m.cell.causal, m.cell.seqlen, m.mode)
        if m.status == OK and base.get(key):
            out[(m.impl,) + key] = m.tflops / base[key]
    return out


def rows(run: BenchRun) -> list[dict]:
    """One dict per measurement with the CSV_COLUMNS keys."""
    r = ratios(run)
    meta = {k: run.meta.get(k) for k in META_COLUMNS}
    out = []
    for m in run.measurements:
        row = measurement_row(m)
        row["ratio_cudnn"] = r.get((m.impl, m.cell.head_dim, m.cell.causal, m.cell.seqlen, m.mode))
        row.update(meta)
        out.append(row)
    return out


def impl_order(run: BenchRun, labels: dict[str, str]) -> list[str]:
    """Implementations in the order of `labels` that appear in the run, then any others."""
    seen = list(dict.fromkeys(m.impl for m in run.measurements))
    return [n for n in labels if n in seen] + [n for n in seen if n not in labels]


def _cell_text(m, ratio) -> str:
    if m is None:
        return "-"
    if m.status != OK:
        return STATUS_WORDS[m.status]
    tf = f"{m.tflops:.0f}" if m.tflops >= 10 else f"{m.tflops:.2g}"  # tiny test shapes stay readable
    return f"{tf} {ratio:.2f}x" if ratio is not None else tf


def format_table(run: BenchRun, labels: dict[str, str]) -> str:
    """The main table: one row per (head dim, mask, S, mode), one column per implementation."""
    order = impl_order(run, labels)
    r = ratios(run)
    by_key = {(m.impl, m.cell.head_dim, m.cell.causal, m.cell.seqlen, m.mode): m for m in run.measurements}
    row_keys = list(dict.fromkeys((m.cell.head_dim, m.cell.causal, m.cell.seqlen, m.mode) for m in run.measurements))
    row_keys.sort(key=lambda k: (k[0], k[1], k[3] != "fwd", k[3] == "fwdbwd", k[2]))
    width = max([COL_WIDTH] + [len(labels.get(n, n)) for n in order])
    head = f"{'d':>4} {'mask':<6} {'S':>6} {'mode':<7} |" + "".join(
        f" {labels.get(n, n):>{width}}" for n in order
    )
    lines = [head, "-" * len(head)]
    previous = None
    for d, causal, s, mode in row_keys:
        if previous is not None and previous != (d, causal, mode):
            lines.append("")
        previous = (d, causal, mode)
        cells = "".join(
            f" {_cell_text(by_key.get((n, d, causal, s, mode)), r.get((n, d, causal, s, mode))):>{width}}"
            for n in order
        )
        lines.append(f"{d:>4} {'causal' if causal else 'full':<6} {s:>6} {MODE_LABELS.get(mode, mode):<7} |{cells}")
    return "\n".join(lines)


def format_untimed(run: BenchRun, labels: dict[str, str]) -> str:
    """Why each implementation was not timed where it was not, grouped by (impl, status, reason)."""
    groups = defaultdict(list)
    for m in run.measurements:
        if m.status not in (OK, ABSENT):
            groups[(m.impl, m.status, m.reason)].append(m)
    lines = []
    for (impl, status, reason), ms in groups.items():
        where = sorted({f"d={m.cell.head_dim} {m.cell.mask} S={m.cell.seqlen}" for m in ms})
        modes = sorted({MODE_LABELS.get(m.mode, m.mode) for m in ms})
        shown = ", ".join(where[:4]) + (f" (+{len(where) - 4} more)" if len(where) > 4 else "")
        lines.append(f"  {labels.get(impl, impl)} {STATUS_WORDS[status]} [{'/'.join(modes)}] at {shown}: {reason}")
    for impl, reason in run.absent.items():
        lines.append(f"  {labels.get(impl, impl)} absent: {reason}")
    return "\n".join(lines)


def format_host_times(run: BenchRun, labels: dict[str, str], shape: str) -> str:
    """One row per implementation or fa3lite entry, host microseconds per call in each mode (wall:
    the no-grad forward including the GPU)."""
    modes = ("fwd", "fwd_grad", "fwd_bwd")
    lines = [f"Host time per call at {shape}, us (issued back to back; fwd: inputs without grad, "
             f"fwd_grad: inputs requiring grad, fwd_bwd: forward + autograd.grad; wall: fwd with the GPU; "
             f"SDPA-style entries on (B, H, S, d) views made once):",
             f"  {'impl':<18} " + " ".join(f"{m:>9}" for m in modes) + f" {'wall':>9}"]
    rows: dict[str, dict[str, object]] = {}
    for h in run.host_times:
        rows.setdefault(h.impl, {})[h.mode] = h
    for impl, by_mode in rows.items():
        first = next(iter(by_mode.values()))
        if first.status != OK:
            lines.append(f"  {labels.get(impl, impl):<18} {STATUS_WORDS[first.status]:>9}  {first.reason[:90]}")
            continue
        cells = [f"{by_mode[m].host_us:>9.1f}" if m in by_mode else f"{'-':>9}" for m in modes]
        wall = f"{by_mode['fwd'].wall_us:>9.1f}" if "fwd" in by_mode else f"{'-':>9}"
        lines.append(f"  {labels.get(impl, impl):<18} " + " ".join(cells) + f" {wall}")
    return "\n".join(lines)


def format_compile_times(run: BenchRun) -> str:
    lines = ["fa3lite first call per variant: cold cache (compile) / disk cache (new process) / warm call;",
             "  the first row of each process also carries that process's first-call setup (its disk column",
             "  shows how much):",
             f"  {'d':>4} {'mask':<6} {'kind':<4} {'cold s':>8} {'disk s':>8} {'warm ms':>8}"]
    for c in run.compile_times:
        mask = "causal" if c.causal else "full"
        if c.status == OK:
            disk = f"{c.disk_cached_s:8.3f}" if c.disk_cached_s is not None else f"{'-':>8}"
            note = f"  ({c.reason})" if c.reason else ""
            lines.append(f"  {c.head_dim:>4} {mask:<6} {c.kind:<4} {c.cold_s:8.3f} {disk} {c.warm_ms:8.3f}{note}")
        else:
            lines.append(f"  {c.head_dim:>4} {mask:<6} {c.kind:<4} {STATUS_WORDS[c.status]:>8}  {c.reason[:90]}")
    return "\n".join(lines)


def format_checks(run: BenchRun) -> str:
    """Counts of check outcomes, then every check that did not pass."""
    counts = defaultdict(int)
    for c in run.checks:
        counts[c.status] += 1
    lines = ["Correctness checks (FA3 rule vs fp32 reference): "
             + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))]
    for c in run.checks:
        if c.status not in (OK, SKIPPED) or c.impl == "numba-oracle":
            mask = "causal" if c.causal else "full"
            lines.append(f"  {c.impl} d={c.head_dim} {mask} S={c.seqlen}: {c.status}: {c.detail[:160]}")
    return "\n".join(lines)


def format_report(run: BenchRun, labels: dict[str, str], host_shape: str) -> str:
    """Everything printed at the end of a run (and saved as table.txt)."""
    m = run.meta
    cfg = run.config
    header = [
        f"fa3lite benchmark: {m.get('device')} (sm {m.get('capability')}), driver {m.get('driver')}, "
        f"torch {m.get('torch')}, CUDA {m.get('cuda')}, cuDNN {m.get('cudnn')}",
        f"fa3lite {m.get('fa3lite_version')} commit {m.get('fa3lite_commit')} source {m.get('fa3lite_source_hash')}"
        f"  {m.get('date_utc')}",
    ]
    decode_run = bool(cfg.get("decode"))
    if decode_run:
        header.append(f"decode grid ({cfg.get('decode')}), {cfg.get('dtype')}, median of {cfg.get('reps')} reps; "
                      "CUDA-graph replays of one call per input set (the GPU's time, no host gaps; host time "
                      "per call below), inputs rotated past L2")
    else:
        header += [
            f"{cfg.get('dtype')}, {cfg.get('tokens')} tokens per batch, width {cfg.get('width')} (H = width/d), "
            f"median of {cfg.get('reps')} reps{_rounds(cfg)}; TFLOP/s and ratio to SDPA cuDNN "
            "(FLOPs 4*B*H*S*S*d, /2 causal, x2.5 bwd)",
            "Each call timed between CUDA events with the host queued ahead, inputs rotated past L2, as in "
            "training (inputs require grad); a call whose host work outlasts its GPU work is timed host-bound."
            + _soak(cfg),
        ]
    if not run.complete:
        header.append("INCOMPLETE RUN: stopped early; cells not reached are missing or marked skip")
    parts = ["\n".join(header)]
    if decode_run:
        parts.append(format_decode(run, labels))
    else:
        parts.append(format_table(run, labels))
    untimed = format_untimed(run, labels)
    if untimed:
        parts.append("Not timed:\n" + untimed)
    if run.features:
        parts.append(format_features(run, labels))
    if run.checks:
        parts.append(format_checks(run))
    if run.host_times:
        parts.append(format_host_times(run, labels, host_shape))
    if run.compile_times:
        parts.append(format_compile_times(run))
    if run.notes:
        parts.append("Notes:\n" + "\n".join(f"  {n}" for n in run.notes))
    parts.append(f"elapsed {run.elapsed_s:.0f} s")
    return "\n\n".join(parts)


def _dense_key(m) -> tuple:
    """What ties a varlen row to its dense comparator: implementation, shape but for the layout, mode."""
    c = m.case
    return (m.impl, c.head_dim, c.heads, c.causal, c.n_seqs, c.dtype, m.mode)


def feature_ratios(run: BenchRun) -> dict:
    """{index in run.features: (ratio_to_best_peer, dense_ratio)} for fa3lite's timed rows:
    its TFLOP/s over the best peer's timed on the same case and mode (None when no peer was), and
    for a varlen row over its dense comparator's (None elsewhere, or when that was not timed)."""
    best_peer, dense = {}, {}
    for m in run.features:
        if m.status != OK:
            continue
        if m.impl not in FA3LITE_IMPLS:
            key = (m.case, m.mode)
            best_peer[key] = max(best_peer.get(key, 0.0), m.tflops)
        elif m.case.kind == DENSE:
            dense[_dense_key(m)] = m.tflops
    out = {}
    for n, m in enumerate(run.features):
        if m.status != OK or m.impl not in FA3LITE_IMPLS:
            continue
        peer = best_peer.get((m.case, m.mode))
        comparator = dense.get(_dense_key(m)) if m.case.kind == VARLEN else None
        out[n] = (m.tflops / peer if peer else None, m.tflops / comparator if comparator else None)
    return out


def feature_rows(run: BenchRun) -> list[dict]:
    """One dict per feature measurement: results.feature_row plus ratio_to_best_peer and dense_ratio."""
    r = feature_ratios(run)
    out = []
    for n, m in enumerate(run.features):
        row = feature_row(m)
        row["ratio_to_best_peer"], row["dense_ratio"] = r.get(n, (None, None))
        out.append(row)
    return out


def _ratio_text(ratio) -> str:
    return f"{ratio:.2f}x" if ratio is not None else "-"


def format_features(run: BenchRun, labels: dict[str, str]) -> str:
    """The feature table: one row per (case, mode), one column of TFLOP/s (or a status word) per
    implementation, then fa3lite's ratios; below it, why an implementation was not timed where."""
    seen = list(dict.fromkeys(m.impl for m in run.features))
    order = [n for n in labels if n in seen] + [n for n in seen if n not in labels]
    main = next((n for n in order if n in FA3LITE_IMPLS), None)  # the implementation the ratios are of
    ratios_of = feature_ratios(run)
    by_key, ratio_by_key = {}, {}
    for n, m in enumerate(run.features):
        by_key[(m.impl, m.case, m.mode)] = m
        if m.impl == main and n in ratios_of:
            ratio_by_key[(m.case, m.mode)] = ratios_of[n]
    row_keys = list(dict.fromkeys((m.case, m.mode) for m in run.features))
    width = max([COL_WIDTH] + [len(labels.get(n, n)) for n in order])
    main_label = labels.get(main, main) if main else "fa3lite"
    lines = [
        "Feature rows: TFLOP/s on the (query, key) pairs each mask leaves (window: the band; varlen and dense: "
        "each sequence's own);",
        f"  vs peer = {main_label} / the best peer that ran; vs dense = {main_label} varlen / {main_label} dense, "
        "the comparator at equal tokens: (n_seqs, round(tokens/n_seqs), H, d), same mask",
    ]
    head = (f"{'kind':<6} {'d':>4} {'mask':<6} {'window':<11} {'seqs':>4} {'tokens':>6} {'mode':<7} |"
            + "".join(f" {labels.get(n, n):>{width}}" for n in order) + f" | {'vs peer':>7} {'vs dense':>8}")
    lines += [head, "-" * len(head)]
    previous = None
    for case, mode in row_keys:
        if previous is not None and previous != case:
            lines.append("")
        previous = case
        window = f"({case.window[0]}, {case.window[1]})" if case.window != NO_WINDOW else "-"
        cells = "".join(f" {_cell_text(by_key.get((n, case, mode)), None):>{width}}" for n in order)
        peer, dense = ratio_by_key.get((case, mode), (None, None))
        lines.append(f"{case.kind:<6} {case.head_dim:>4} {case.mask:<6} {window:<11} {case.n_seqs:>4} "
                     f"{case.tokens:>6} {MODE_LABELS.get(mode, mode):<7} |{cells} | {_ratio_text(peer):>7} "
                     f"{_ratio_text(dense):>8}")
    groups = defaultdict(list)
    for m in run.features:
        if m.status not in (OK, ABSENT):
            groups[(m.impl, m.status, m.reason)].append(m)
    if groups:
        lines.append("Feature rows not timed:")
    for (impl, status, reason), ms in groups.items():
        where = list(dict.fromkeys(f"{m.case.kind} d={m.case.head_dim} {m.case.mask}" for m in ms))
        modes = sorted({MODE_LABELS.get(m.mode, m.mode) for m in ms})
        shown = ", ".join(where[:4]) + (f" (+{len(where) - 4} more)" if len(where) > 4 else "")
        lines.append(f"  {labels.get(impl, impl)} {STATUS_WORDS[status]} [{'/'.join(modes)}] at {shown}: {reason}")
    return "\n".join(lines)


def write_csv(path: Path, run: BenchRun) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        w.writeheader()
        for row in rows(run):
            w.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in CSV_COLUMNS})


def to_json(run: BenchRun) -> dict:
    """Everything of the run; a --decode run (config "decode") adds "decode" (decode_report.decode_rows)
    and "copy_bandwidth_gbs"."""
    data = {
        "meta": run.meta,
        "config": run.config,
        "complete": run.complete,
        "elapsed_s": run.elapsed_s,
        "self_check": run.self_check,
        "absent": run.absent,
        "results": rows(run),
        "features": feature_rows(run),
        "checks": [asdict(c) for c in run.checks],
        "host_time": [asdict(h) for h in run.host_times],
        "compile_time": [asdict(c) for c in run.compile_times],
        "notes": run.notes,
    }
    if run.config.get("decode"):
        data["decode"] = decode_rows(run)
        data["copy_bandwidth_gbs"] = run.copy_bandwidth_gbs
    return data


def write_json(path: Path, run: BenchRun) -> None:
    with open(path, "w") as f:
        json.dump(to_json(run), f, indent=1, default=str)
        f.write("\n")


def _soak(cfg: dict) -> str:
    """The soak before each timed batch, where the run had one (timing.CudaTimer)."""
    soak = cfg.get("soak_ms") or 0
    return (f" Each timed batch follows {soak:g} ms of the same call back to back: timed at the clock its own "
            "power draw sustains (the board's power limit), as in training." if soak else "")


def _rounds(cfg: dict) -> str:
    """' in R interleaved rounds' for a grid timed in rounds (runs before --rounds had none)."""
    rounds = cfg.get("rounds") or 1
    return f" in {rounds} interleaved rounds" if rounds > 1 else ""
