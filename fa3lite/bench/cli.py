"""Command line of the sequence-length benchmark: python -m fa3lite.bench [options].

Exit status: 0 after a complete run; 1 when fa3lite gave a wrong answer somewhere; 2 on a usage
error (argparse); 3 without a Hopper GPU (after the reference self-check, the one thing it can still
run); 130 when interrupted (the files then hold what was measured so far).
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from . import grid

EXIT_OK = 0
EXIT_FA3LITE_WRONG = 1
EXIT_NO_HOPPER = 3  # not 2: argparse exits 2 on a usage error
EXIT_INTERRUPTED = 130
DEFAULT_OUT = "bench_out"
DEFAULT_REPS = 30
DEFAULT_WARMUP = 5
MIN_REPS = 20  # a median of fewer is too noisy to trust
# Each grid cell's and feature row's timings go in rounds through every (implementation, mode), the
# reps shared out over them (runner.GridRunner, features.FeatureRunner): clock drift then hits a
# cell's implementations alike.
DEFAULT_ROUNDS = 3
# Each timed batch follows this long of the same call back to back (timing.CudaTimer soak): the board
# power limit then throttles every implementation's batch as it would in training, whatever ran before
# (a peer's JIT compile left the GPU idle and cool, or a power-hungry peer left it throttled). The
# clock settles within ~100 ms of the load starting (benchmarks/RESULTS.md section 33).
DEFAULT_SOAK_MS = 200.0
DEFAULT_COMPILE_TIMEOUT_S = 300.0
PARTIAL_NAME = "results.partial.jsonl"
COMPILE_SHARE = 0.3  # of the remaining time budget, for each compile-time child process


@dataclass(frozen=True)
class Options:
    spec: grid.GridSpec
    preset: str
    impls: tuple[str, ...] | None
    out: Path
    reps: int
    warmup: int
    time_budget: float | None
    host_time: bool
    compile_time: bool
    compile_timeout: float
    odd_check: bool
    plots: bool
    features: bool = True
    decode: str | None = None  # the decode preset of a --decode run (decode_cases.DECODE_PRESETS), else None
    rounds: int = DEFAULT_ROUNDS  # timing rounds per grid cell and feature row
    soak_ms: float = DEFAULT_SOAK_MS  # back-to-back calls before each timed batch (timing.CudaTimer)


def _list_of(parse):
    def convert(text: str):
        try:
            return tuple(v for part in text.split(",") if part.strip() for v in _as_tuple(parse(part)))
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def _as_tuple(v):
    return v if isinstance(v, tuple) else (v,)


def _head_dim(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"head dim: expected an integer such as 128, got {text!r}") from None


def _impl_name(text: str) -> str:
    return text.strip()


def _causal(text: str):
    try:
        return grid.parse_causal(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    from .decode_impls import DECODE_IMPL_NAMES
    from .impls import DETERMINISTIC_IMPL, IMPL_NAMES

    p = argparse.ArgumentParser(
        prog="python -m fa3lite.bench",
        description=(
            "Sequence-length benchmark of fa3lite against torch SDPA (cuDNN, FA2, memory-efficient), "
            "FlexAttention, and FlashAttention-4/-3 when installed: TFLOP/s at 16k tokens per batch and "
            "model width 2048 (H = 2048/d), forward, backward and forward+backward."
        ),
        epilog=(
            "Without --quick or --full: d in 64, 128, 256, full and causal, S in 1k, 4k, 16k. "
            "After the grid, feature rows for each head dim (unless --no-features): causal with a 4k "
            "sliding window at 16k, and packed varlen batches (causal and full) beside the dense kernel "
            "at equal tokens, with FA4 as the peer. "
            "Writes table.txt, results.csv, results.json and plot_<mode>.png to --out. "
            "With --decode: the decode grid instead (flash_attn_with_kvcache against SDPA on the cache "
            "slice, cuDNN and FA4; Sq 1 and 4, B 1/8/64, cache 1k-128k, Hq/Hk 32/8 and 64/8, d=128, "
            "contiguous and paged 16/64/256; --quick or --decode-quick: Sq=1, B 1 and 8, caches 8k and "
            "128k, Hq/Hk 32/8, contiguous and paged 64): K/V GB/s and their fraction of the device's copy "
            "bandwidth, table.txt and results.json only; --dtype, --impl, --reps, --warmup, --time-budget, "
            "--out and --no-host-time apply, the grid's axis filters do not. "
            f"Exit status: {EXIT_OK} done, {EXIT_FA3LITE_WRONG} fa3lite wrong somewhere, "
            f"{EXIT_NO_HOPPER} no Hopper GPU (only the CPU reference self-check ran), "
            f"{EXIT_INTERRUPTED} interrupted (files hold what was measured)."
        ),
    )
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="preset", action="store_const", const=grid.PRESET_QUICK,
                      help="first look: d=128, full and causal, S in 1k, 4k, 16k")
    size.add_argument("--full", dest="preset", action="store_const", const=grid.PRESET_FULL,
                      help="everything: d in 64, 128, 256, full and causal, S from 512 to 16k")
    p.set_defaults(preset=grid.PRESET_DEFAULT)
    p.add_argument("--head-dim", action="append", type=_list_of(_head_dim), metavar="D[,D]",
                   help="head dims to run (replaces the preset's)")
    p.add_argument("--causal", nargs="?", const=(True,), type=_causal, metavar="true|false|both",
                   help="mask: --causal alone or true = causal only, false = full only, both")
    p.add_argument("--seqlen", action="append", type=_list_of(grid.parse_seqlen), metavar="S[,S]",
                   help="sequence lengths, e.g. 1k,4k,16k (replaces the preset's)")
    p.add_argument("--mode", action="append", type=_list_of(grid.parse_mode), metavar="M[,M]",
                   help="fwd, bwd, fwdbwd (or fwd+bwd) or all")
    p.add_argument("--dtype", choices=grid.DTYPES, default="bf16")
    p.add_argument("--impl", action="append", type=_list_of(_impl_name), metavar="NAME[,NAME]",
                   help=f"implementations to run, from {', '.join(IMPL_NAMES)} "
                        f"(default all but {DETERMINISTIC_IMPL}); with --decode from "
                        f"{', '.join(DECODE_IMPL_NAMES)} (default all)")
    p.add_argument("--deterministic", action="store_true",
                   help=f"also run fa3lite with its deterministic backward ({DETERMINISTIC_IMPL}), "
                        "next to the default one")
    p.add_argument("--tokens", type=int, default=grid.DEFAULT_TOKENS, help="tokens per batch (B = tokens/S)")
    p.add_argument("--width", type=int, default=grid.DEFAULT_WIDTH, help="model width (H = width/d)")
    p.add_argument("--out", type=Path, default=Path(DEFAULT_OUT), help="output folder (default ./bench_out)")
    p.add_argument("--reps", type=int, default=DEFAULT_REPS, help=f"timed calls per measurement (>= {MIN_REPS})")
    p.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                   help="interleaved timing rounds per grid cell and feature row, the reps shared out over them "
                        f"(default {DEFAULT_ROUNDS})")
    p.add_argument("--warmup", type=int, default=DEFAULT_WARMUP,
                   help="untimed calls first (at least one per input set)")
    p.add_argument("--soak-ms", type=float, default=DEFAULT_SOAK_MS, metavar="MS",
                   help="after the warm-up, run the call back to back this long before each timed batch, so "
                        f"it is timed at the clock its own power draw sustains (default {DEFAULT_SOAK_MS:g})")
    p.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                   help="stop starting new work after this long; the rest is reported as skipped")
    p.add_argument("--compile-timeout", type=float, default=DEFAULT_COMPILE_TIMEOUT_S, metavar="SECONDS",
                   help="limit for each compile-time child process")
    p.add_argument("--no-host-time", dest="host_time", action="store_false",
                   help="skip the host-time-per-call measurement at B=1, S=128")
    p.add_argument("--no-compile-time", dest="compile_time", action="store_false",
                   help="skip timing fa3lite's first-call compiles")
    p.add_argument("--no-odd-check", dest="odd_check", action="store_false",
                   help="skip the extra correctness check at a length that is no multiple of a tile")
    p.add_argument("--no-plots", dest="plots", action="store_false", help="write no PNG plots")
    p.add_argument("--no-features", dest="features", action="store_false",
                   help="skip the feature rows (4k sliding window at 16k, packed varlen batches) after the grid")
    p.add_argument("--decode", action="store_true",
                   help="run the decode grid (KV-cache decode steps, K/V bandwidth) instead of the dense grid "
                        "and feature rows; with --quick its small preset")
    p.add_argument("--decode-quick", action="store_true", help="--decode --quick: the decode grid's small preset")
    return p


def _flatten(groups):
    return tuple(v for g in groups for v in g) if groups else None


def with_deterministic(impls: tuple[str, ...] | None) -> tuple[str, ...]:
    """The implementation names of --impl (None: the default set) plus fa3lite's deterministic
    backward: what --deterministic runs."""
    from .impls import DEFAULT_IMPL_NAMES, DETERMINISTIC_IMPL

    return tuple(dict.fromkeys((impls or DEFAULT_IMPL_NAMES) + (DETERMINISTIC_IMPL,)))


def parse_args(argv=None) -> Options:
    from .impls import select_impls

    p = build_parser()
    a = p.parse_args(argv)
    if a.reps < MIN_REPS:
        p.error(f"--reps: expected at least {MIN_REPS} (a median of fewer is noise), got {a.reps}")
    if a.rounds < 1:
        p.error(f"--rounds: expected at least 1, got {a.rounds}")
    if a.warmup < 0:
        p.error(f"--warmup: expected a non-negative count, got {a.warmup}")
    if a.soak_ms < 0:
        p.error(f"--soak-ms: expected milliseconds >= 0, got {a.soak_ms}")
    if a.time_budget is not None and a.time_budget <= 0:
        p.error(f"--time-budget: expected a positive number of seconds, got {a.time_budget}")
    impls = _flatten(a.impl)
    decode = _decode_preset(a)
    if a.deterministic:
        if decode:
            p.error("--deterministic: the decode grid runs no backward")
        impls = with_deterministic(impls)
    try:
        spec = grid.make_spec(a.preset, _flatten(a.head_dim), a.causal, _flatten(a.seqlen),
                              _flatten(a.mode), a.dtype, a.tokens, a.width)
        if decode:
            from .decode_impls import select_decode_impls

            select_decode_impls(impls)
        else:
            select_impls(impls)
    except ValueError as exc:
        p.error(str(exc))
    return Options(spec, a.preset, impls, a.out, a.reps, a.warmup, a.time_budget, a.host_time,
                   a.compile_time, a.compile_timeout, a.odd_check, a.plots, a.features, decode, a.rounds,
                   a.soak_ms)


def _decode_preset(a) -> str | None:
    """The decode preset the arguments ask for: None without --decode / --decode-quick."""
    from .decode_cases import PRESET_DECODE_FULL, PRESET_DECODE_QUICK

    if not (a.decode or a.decode_quick):
        return None
    return PRESET_DECODE_QUICK if a.decode_quick or a.preset == grid.PRESET_QUICK else PRESET_DECODE_FULL


def main(argv=None) -> int:
    opts = parse_args(argv)
    from .envinfo import hopper_status
    from .selfcheck import reference_self_check

    t0 = time.monotonic()
    check = reference_self_check()
    print("Reference self-check (CPU, tiny shape, FA3 rule vs float64):")
    for line in check.lines:
        print("  " + line)
    hopper, why = hopper_status()
    if not hopper:
        verdict = "passed" if check.ok else "FAILED"
        print(f"fa3lite.bench: no Hopper GPU ({why}); ran only the reference self-check, which {verdict}",
              file=sys.stderr)
        return EXIT_NO_HOPPER
    return _run_on_gpu(opts, check, t0)


def _run_on_gpu(opts: Options, check, t0: float) -> int:
    if opts.decode:
        from .decode_run import run_decode

        return run_decode(opts, check, t0)
    cache_dir = None
    if opts.compile_time and not (opts.impls and "fa3lite" not in opts.impls):
        # Set before anything imports fa3lite's runtime: the children time a cold compile here, and
        # this process then finds their kernels on disk instead of compiling again.
        cache_dir = tempfile.mkdtemp(prefix="fa3lite-bench-cache-")
        os.environ["FA3LITE_CACHE_DIR"] = cache_dir
    try:
        return _bench(opts, check, t0, cache_dir)
    finally:
        if cache_dir:
            shutil.rmtree(cache_dir, ignore_errors=True)


def _bench(opts: Options, check, t0: float, cache_dir: str | None) -> int:
    import json

    from . import compile_time, report
    from .envinfo import collect_env
    from .impls import FA3LITE_IMPLS, select_impls
    from .plots import matplotlib_missing, write_plots
    from .progress import run_tracked
    from .results import WRONG, BenchRun, measurement_row
    from .runner import HOST_SHAPE, TIME_BUDGET_REASON, GridRunner
    from .timing import CudaTimer, l2_bytes

    # torch warns when an autograd worker thread first runs cuBLAS and then makes the primary
    # context current itself: harmless, and once per run it would only clutter the log.
    warnings.filterwarnings("ignore", message="Attempting to run cuBLAS, but there was no current CUDA context")
    spec = opts.spec
    cells = grid.build_grid(spec)
    impls = select_impls(opts.impls)
    labels = {i.name: i.label for i in impls}
    deadline = t0 + opts.time_budget if opts.time_budget else None
    out_dir = opts.out
    out_dir.mkdir(parents=True, exist_ok=True)
    partial = out_dir / PARTIAL_NAME
    absent = {i.name: reason for i in impls if (reason := i.probe())}
    run = BenchRun.begin(
        collect_env(),
        dict(preset=opts.preset, dtype=spec.dtype, tokens=spec.tokens, width=spec.width,
             head_dims=list(spec.head_dims), causal=list(spec.causal), seqlens=list(spec.seqlens),
             modes=list(spec.modes), reps=opts.reps, rounds=opts.rounds, warmup=opts.warmup,
             soak_ms=opts.soak_ms, impls=[i.name for i in impls],
             time_budget_s=opts.time_budget, odd_check=opts.odd_check, features=opts.features),
        check, absent)
    print(f"{run.meta['device']}: {len(cells)} cells x {len(spec.modes)} modes x {len(impls)} implementations"
          + (f"; absent: {', '.join(absent)}" if absent else ""), flush=True)
    status = EXIT_OK
    partial_file = open(partial, "w")

    def on_result(m):
        partial_file.write(json.dumps(measurement_row(m), default=str) + "\n")
        partial_file.flush()

    try:
        if cache_dir and "fa3lite" not in absent:
            if deadline is None or time.monotonic() < deadline:
                variants = compile_time.variants_of(cells)
                print(f"timing fa3lite compiles of {len(variants)} variants (cold, then disk cache)...",
                      file=sys.stderr, flush=True)
                limit = opts.compile_timeout
                if deadline is not None:
                    # Leave most of the budget to the grid: the compiles are a side table.
                    limit = min(limit, COMPILE_SHARE * (deadline - time.monotonic()))
                run.compile_times, setup_notes = compile_time.measure(variants, spec.dtype, cache_dir, limit)
                run.notes += setup_notes
        soak_s = opts.soak_ms / 1000.0
        # the rounds of the grid and the feature rows share the reps out (at least opts.reps pooled)
        round_timer = CudaTimer(opts.warmup, math.ceil(opts.reps / opts.rounds), soak_s)
        runner = GridRunner(impls, spec, round_timer, "cuda", l2_bytes=l2_bytes(0), absent=absent,
                            deadline=deadline, odd_check=opts.odd_check, on_result=on_result, rounds=opts.rounds)
        if opts.host_time:   # first: seconds of work, never lost to the time budget (the grid's cells may be)
            run.host_times = runner.host_times()
        try:
            run.measurements = run_tracked(runner, cells)
        finally:
            run.checks = runner.checks
            if runner.wall_s:
                run.notes.append("wall time per implementation over the grid (checks, compiles, timing): "
                                 + ", ".join(f"{labels.get(n, n)} {t:.0f} s" for n, t in runner.wall_s.items()))
        if opts.features:
            _run_features(run, impls, spec, round_timer, opts.rounds, absent, deadline, runner.fatal)
    except KeyboardInterrupt:
        run.complete = False
        status = EXIT_INTERRUPTED
        run.notes.append("interrupted; the table holds what was measured before")
        if not run.measurements:
            run.measurements = _read_partial(partial, cells)
    skipped = sum(m.reason == TIME_BUDGET_REASON for m in run.measurements + run.features)
    if skipped:
        run.complete = False
        run.notes.append(f"time budget ({opts.time_budget:.0f} s) spent: {skipped} measurements skipped")
    run.elapsed_s = time.monotonic() - t0
    partial_file.close()
    shape = "B={batch}, S={seqlen}, H={heads}, d={head_dim}".format(**HOST_SHAPE)
    text = report.format_report(run, labels, shape)
    report.write_csv(out_dir / "results.csv", run)
    report.write_json(out_dir / "results.json", run)
    if opts.plots:
        missing = matplotlib_missing()
        if missing:
            print(f"no plots: {missing}", file=sys.stderr)
        else:
            write_plots(run, out_dir, labels)
    (out_dir / "table.txt").write_text(text + "\n")
    partial.unlink(missing_ok=True)
    print(text, flush=True)
    print(f"files in {out_dir}/: " + ", ".join(sorted(p.name for p in out_dir.iterdir())), flush=True)
    if any(m.impl in FA3LITE_IMPLS and m.status == WRONG for m in run.measurements + run.features) \
            and status == EXIT_OK:
        status = EXIT_FA3LITE_WRONG
    return status


def _run_features(run, impls, spec, timer, rounds, absent, deadline, fatal) -> None:
    """The feature rows after the grid, within the same deadline, into run.features and run.checks
    (what finished is kept when interrupted)."""
    from .feature_cases import build_feature_cases
    from .features import FeatureRunner
    from .progress import run_tracked
    from .timing import l2_bytes

    cases = build_feature_cases(spec)
    runner = FeatureRunner(impls, spec.modes, timer, "cuda", l2_bytes=l2_bytes(0), absent=absent,
                           deadline=deadline, fatal=fatal, rounds=rounds)
    print(f"feature rows: {len(cases)} cases (sliding window, varlen, dense at equal tokens)", file=sys.stderr,
          flush=True)
    try:
        run_tracked(runner, cases)
    finally:
        run.features = list(runner.rows)
        run.checks = list(run.checks) + runner.checks


def _read_partial(path: Path, cells):
    """Rebuild measurements from the partial JSON lines written so far (after an interrupt)."""
    import json

    from .results import Measurement
    from .timing import Stats

    by_shape = {(c.head_dim, c.mask, c.seqlen): c for c in cells}
    out = []
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        try:
            r = json.loads(line)
            cell = by_shape[(r["head_dim"], r["mask"], r["seqlen"])]
            stats = Stats(r["ms_median"], r["ms_p20"], r["ms_p80"], r["reps"]) if r["status"] == "ok" else None
            out.append(Measurement(r["impl"], cell, r["mode"], r["status"], stats, r["reason"],
                                   r.get("deterministic")))
        except (ValueError, KeyError, TypeError):
            continue
    return out
