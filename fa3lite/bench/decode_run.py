"""`python -m fa3lite.bench --decode`: the decode grid in place of the dense grid and feature rows.

Order: the device's copy bandwidth (once), the host time per call at decode.HOST_CASE (unless
--no-host-time; seconds of work, never cut by the time budget), then the cases (decode.DecodeRunner). Writes table.txt and results.json ("decode" rows
and "copy_bandwidth_gbs"); no CSV rows, plots or compile times (those describe the dense grid).
"""
from __future__ import annotations

import time

from . import decode, report, timing
from .cli import EXIT_FA3LITE_WRONG, EXIT_INTERRUPTED, EXIT_OK
from .decode import DecodeRunner, measure_copy_bandwidth
from .decode_cases import DecodeCase, build_decode_cases, make_decode_spec
from .decode_impls import DECODE_FA3LITE_IMPLS, select_decode_impls
from .envinfo import collect_env
from .progress import run_tracked
from .results import WRONG, BenchRun
from .runner import TIME_BUDGET_REASON, exception_reason


def host_shape_text(case: DecodeCase) -> str:
    """The host-time table's shape, e.g. "Sq=1, B=1, cache 1024, Hq/Hk=32/8, d=128, contiguous"."""
    return (f"Sq={case.sq}, B={case.batch}, cache {case.cache_len}, Hq/Hk={case.heads_q}/{case.heads_kv}, "
            f"d={case.head_dim}, {case.layout}")


def run_decode(opts, check, t0: float, device: str = "cuda") -> int:
    """The decode run of cli.Options `opts` (opts.decode: the preset); check: the reference
    self-check's result; t0: the run's start (time.monotonic). Returns cli's exit status."""
    spec = make_decode_spec(opts.decode, opts.spec.dtype)
    cases = build_decode_cases(spec)
    impls = select_decode_impls(opts.impls)
    labels = {i.name: i.label for i in impls}
    absent = {i.name: reason for i in impls if (reason := i.probe())}
    deadline = t0 + opts.time_budget if opts.time_budget else None
    opts.out.mkdir(parents=True, exist_ok=True)
    run = BenchRun.begin(
        collect_env(),
        dict(decode=opts.decode, dtype=spec.dtype, query_lens=list(spec.query_lens), batches=list(spec.batches),
             cache_lens=list(spec.cache_lens), head_configs=[list(h) for h in spec.head_configs],
             head_dim=spec.head_dim, page_sizes=list(spec.page_sizes), cases=len(cases), reps=opts.reps,
             warmup=opts.warmup, impls=[i.name for i in impls], time_budget_s=opts.time_budget),
        check, absent)
    print(f"{run.meta['device']}: decode grid ({opts.decode}), {len(cases)} cases x {len(impls)} implementations"
          + (f"; absent: {', '.join(absent)}" if absent else ""), flush=True)
    status = EXIT_OK
    timer = timing.CudaTimer(opts.warmup, opts.reps)
    runner = DecodeRunner(impls, timer, device, l2_bytes=timing.l2_bytes(0), absent=absent, deadline=deadline)
    try:
        try:
            run.copy_bandwidth_gbs = measure_copy_bandwidth(timer, device)
        except Exception as exc:
            run.notes.append("copy bandwidth not measured: " + exception_reason(exc))
        if opts.host_time:   # first: a few seconds, and never lost to the time budget
            run.host_times = runner.host_times()
        try:
            run_tracked(runner, cases)
        finally:
            run.decode = list(runner.rows)
    except KeyboardInterrupt:
        run.complete = False
        status = EXIT_INTERRUPTED
        run.decode = list(runner.rows)
        run.notes.append("interrupted; the table holds what was measured before")
    run.checks = list(runner.checks)
    run.notes += runner.notes()
    skipped = sum(m.reason == TIME_BUDGET_REASON for m in run.decode)
    if skipped:
        run.complete = False
        run.notes.append(f"time budget ({opts.time_budget:.0f} s) spent: {skipped} decode rows skipped")
    run.elapsed_s = time.monotonic() - t0
    text = report.format_report(run, labels, host_shape_text(decode.HOST_CASE))
    report.write_json(opts.out / "results.json", run)
    (opts.out / "table.txt").write_text(text + "\n")
    print(text, flush=True)
    print(f"files in {opts.out}/: " + ", ".join(sorted(p.name for p in opts.out.iterdir())), flush=True)
    if status == EXIT_OK and any(m.impl in DECODE_FA3LITE_IMPLS and m.status == WRONG for m in run.decode):
        status = EXIT_FA3LITE_WRONG
    return status
