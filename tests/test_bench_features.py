"""CPU tests of the benchmark's feature rows (sliding window, packed varlen, the dense comparator):
the band's pair count against brute force, the varlen length generator, the cases and their FLOPs,
the packed reference, the runner with a fake timer over fa3lite's torch fallback and a stand-in FA4,
the JSON and table of hand-made rows, and the --no-features switch. One GPU test runs the feature
rows end to end through the command line at a tiny configuration."""
from __future__ import annotations

import functools
import itertools
import json
import sys
import types

import pytest
import torch

from fa3lite.bench import cli, feature_cases, grid, report
from fa3lite.bench.feature_cases import (
    DENSE,
    NO_WINDOW,
    VARLEN,
    VARLEN_MIN_FRACTION,
    WINDOW,
    FeatureCase,
    build_feature_cases,
    varlen_lengths,
)
from fa3lite.bench.features import FeatureRunner, applies
from fa3lite.bench.flops import band_flops, band_pairs
from fa3lite.bench.impls import BASELINE, select_impls
from fa3lite.bench.reference import packed_reference, visible_mask
from fa3lite.bench.results import (
    ABSENT,
    OK,
    OOM,
    SKIPPED,
    UNSUPPORTED,
    WRONG,
    BenchRun,
    FeatureMeasurement,
    Measurement,
)
from fa3lite.bench.runner import TIME_BUDGET_REASON
from fa3lite.bench.timing import Stats

# ---- the band's pair count ---------------------------------------------------------------------------


def _brute_pairs(sq, sk, causal, window):
    """Visible pairs counted one by one under flash_attn's window semantics."""
    left, right = window
    if causal:
        right = 0
    count = 0
    for i in range(sq):
        for j in range(sk):
            past = j - i - (sk - sq)
            count += (right < 0 or past <= right) and (left < 0 or past >= -left)
    return count


WINDOWS = [(-1, -1), (0, 0), (1, 0), (3, 2), (-1, 2), (2, -1), (0, -1), (-1, 0), (50, 50), (7, 0)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("window", WINDOWS, ids=str)
def test_band_pairs_matches_brute_force(causal, window):
    for sq, sk in itertools.product(range(0, 11), range(0, 11)):  # Sq != Sk both ways, windows wider than S
        assert band_pairs(sq, sk, causal, window) == _brute_pairs(sq, sk, causal, window), (sq, sk)


def test_band_pairs_agrees_with_the_reference_mask():
    for sq, sk, causal, window in [(9, 13, True, (4, 0)), (13, 9, False, (2, 3)), (16, 16, True, (-1, -1))]:
        assert band_pairs(sq, sk, causal, window) == int(visible_mask(sq, sk, causal, window).sum())


def test_band_pairs_closed_form_at_the_window_row():
    s, w = 16384, 4096
    # Each query sees min(i, w) keys before it and itself: sum over i of min(i, w) + 1.
    assert band_pairs(s, s, True, (w, 0)) == s * (w + 1) - w * (w + 1) // 2
    assert band_pairs(s, s, True) == s * (s + 1) // 2
    assert band_pairs(s, s, False) == s * s
    assert band_pairs(s, s, True, (0, 0)) == s
    with pytest.raises(ValueError, match="seqlen_q"):
        band_pairs(-1, 4, False)


# ---- varlen lengths ----------------------------------------------------------------------------------


@pytest.mark.parametrize("tokens, max_seqlen", [(16384, 4096), (1000, 64), (5, 4096), (1, 8), (4096, 4096)])
def test_varlen_lengths_sum_bounds_and_seed(tokens, max_seqlen):
    lengths = varlen_lengths(tokens, max_seqlen, seed=3)
    assert sum(lengths) == tokens
    assert all(1 <= n <= max_seqlen for n in lengths)
    assert all(n >= max_seqlen // VARLEN_MIN_FRACTION for n in lengths[:-1])  # only the last is trimmed
    assert varlen_lengths(tokens, max_seqlen, seed=3) == lengths


def test_varlen_lengths_default_batch_is_random_but_fixed():
    lengths = varlen_lengths(16384)
    assert lengths == varlen_lengths(16384, 4096, 0)
    assert varlen_lengths(16384, seed=1) != lengths
    assert len(set(lengths)) > 1 and len(lengths) >= 16384 // 4096


@pytest.mark.parametrize("kwargs, word", [(dict(tokens=0), "tokens"), (dict(tokens=8, max_seqlen=0), "max_seqlen")])
def test_varlen_lengths_rejects(kwargs, word):
    with pytest.raises(ValueError, match=word):
        varlen_lengths(**kwargs)


# ---- cases and FLOPs ---------------------------------------------------------------------------------


def test_default_cases_per_head_dim():
    spec = grid.make_spec("default")
    cases = build_feature_cases(spec)
    assert [(c.kind, c.head_dim, c.causal) for c in cases[:5]] == [
        (WINDOW, 64, True), (VARLEN, 64, False), (DENSE, 64, False), (VARLEN, 64, True), (DENSE, 64, True)]
    assert len(cases) == 3 * 5
    win = cases[0]
    assert (win.seqlens, win.window, win.heads, win.dtype) == ((16384,), (4096, 0), 32, "bf16")
    varlen, dense = cases[1], cases[2]
    assert varlen.packed and varlen.tokens == 16384 and varlen.window == NO_WINDOW
    assert varlen.max_seqlen <= 4096 and varlen.seqlens == varlen_lengths(16384)
    assert dense.n_seqs == varlen.n_seqs and dense.seqlens == (round(16384 / varlen.n_seqs),) * varlen.n_seqs
    assert {c.heads * c.head_dim for c in cases} == {2048}


def test_cases_follow_tokens_masks_and_dtype():
    spec = grid.make_spec("quick", causal=(True,), dtype="fp16", tokens=32768)
    cases = build_feature_cases(spec)
    assert [c.kind for c in cases] == [WINDOW, VARLEN, DENSE]
    assert cases[0].seqlens == (16384, 16384) and all(c.causal and c.dtype == "fp16" for c in cases)
    small = build_feature_cases(grid.make_spec("quick", tokens=1000), window_seqlen=4096)
    assert small[0].seqlens == (4096,)  # fewer tokens than one window sequence: still one


def test_case_flops_count_the_visible_pairs():
    win = FeatureCase(WINDOW, 128, 16, True, (4096, 0), (16384,), "bf16")
    pairs = 16384 * 4097 - 4096 * 4097 // 2
    assert win.flops("fwd") == 4 * 128 * 16 * pairs
    assert win.flops("bwd") == 2.5 * win.flops("fwd") and win.flops("fwdbwd") == 3.5 * win.flops("fwd")
    varlen = FeatureCase(VARLEN, 64, 2, True, NO_WINDOW, (3, 1, 5), "bf16")
    assert varlen.flops("fwd") == 4 * 64 * 2 * (6 + 1 + 15)
    full = FeatureCase(VARLEN, 64, 2, False, NO_WINDOW, (3, 1, 5), "bf16")
    assert full.flops("fwd") == 4 * 64 * 2 * (9 + 1 + 25)
    assert band_flops((3, 1, 5), 2, 64, False, NO_WINDOW, "fwd") == full.flops("fwd")
    with pytest.raises(ValueError, match="mode"):
        win.flops("both")


@pytest.mark.parametrize("kwargs, word", [
    (dict(kind="sideways"), "kind"), (dict(seqlens=()), "seqlens"), (dict(seqlens=(4, 0)), "seqlens"),
    (dict(kind=WINDOW, seqlens=(4, 5)), "one length"),
])
def test_feature_case_rejects(kwargs, word):
    base = dict(kind=VARLEN, head_dim=64, heads=2, causal=True, window=NO_WINDOW, seqlens=(4, 5), dtype="bf16")
    with pytest.raises(ValueError, match=word):
        FeatureCase(**{**base, **kwargs})


def test_reduced_shapes_keep_kind_dim_and_mask():
    for case in build_feature_cases(grid.make_spec("quick")):
        small = case.reduced()
        assert (small.kind, small.head_dim, small.causal) == (case.kind, case.head_dim, case.causal)
        assert small.tokens < case.tokens and small.heads == feature_cases.CHECK_HEADS
    win = build_feature_cases(grid.make_spec("quick"))[0].reduced()
    assert win.window == feature_cases.CHECK_WINDOW_SIZE and win.seqlens == (feature_cases.CHECK_WINDOW_SEQLEN,)
    varlen = build_feature_cases(grid.make_spec("quick"))[1].reduced()
    assert 1 in varlen.seqlens


# ---- the packed reference ----------------------------------------------------------------------------


def _loop_reference(q, k, v, seqlens, scale, causal, window):
    """float64, one query row at a time, each sequence on its own."""
    out = torch.zeros(q.shape, dtype=torch.float64)
    start = 0
    for n in seqlens:
        mask = visible_mask(n, n, causal, window)
        for h in range(q.shape[1]):
            for i in range(n):
                keys = mask[i].nonzero().flatten() + start
                if len(keys) == 0:
                    continue
                s = (k[keys, h].double() @ q[start + i, h].double()) * scale
                out[start + i, h] = torch.softmax(s, 0) @ v[keys, h].double()
        start += n
    return out


@pytest.mark.parametrize("causal, window", [(True, (3, 0)), (False, (2, 1)), (True, NO_WINDOW), (False, NO_WINDOW)])
def test_packed_reference_is_per_sequence_masked_attention(causal, window):
    g = torch.Generator().manual_seed(0)
    seqlens = (5, 1, 8)
    q, k, v, dout = (torch.randn(14, 2, 8, generator=g) for _ in range(4))
    got = packed_reference(q, k, v, dout, seqlens, 0.4, causal, window, True, torch.float64)
    torch.testing.assert_close(got["out"], _loop_reference(q, k, v, seqlens, 0.4, causal, window).float())
    assert set(got) == {"out", "dq", "dk", "dv"} and all(t.shape == q.shape for t in got.values())
    with pytest.raises(ValueError, match="seqlens"):
        packed_reference(q, k, v, dout, (5, 1), 0.4, causal, window, False)


# ---- the runner, on the CPU ----------------------------------------------------------------------------


class FakeTimer:
    """Runs each step once per input set and returns fixed times."""

    def __init__(self, ms=2.0):
        self.ms, self.steps, self.calls = ms, 0, 0

    def time(self, step, n_sets, context):
        self.calls += 1
        with context():
            for i in range(n_sets):
                step(i)
                self.steps += 1
        return [self.ms * 0.9, self.ms, self.ms * 1.1]


def _forced_torch(fn, scale_error=1.0):
    """fa3lite's entry point with its torch fallback in place of the kernels (and, with scale_error,
    a wrong softmax scale)."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        kwargs["backend"] = "torch"
        kwargs["softmax_scale"] = kwargs["softmax_scale"] * scale_error
        return fn(*args, **kwargs)
    return call


@pytest.fixture
def cpu_fa3lite(monkeypatch):
    """fa3lite's entries through the fallback; the checks' shapes shrunk to keep the CPU quick; a
    stand-in FlashAttention-4 module (flash_attn.cute) over the same fallback, recording its windows."""
    import fa3lite

    flash, varlen = fa3lite.flash_attn_func, fa3lite.flash_attn_varlen_func
    monkeypatch.setattr(fa3lite, "flash_attn_func", _forced_torch(flash))
    monkeypatch.setattr(fa3lite, "flash_attn_varlen_func", _forced_torch(varlen))
    monkeypatch.setattr(feature_cases, "CHECK_WINDOW_SEQLEN", 96)
    monkeypatch.setattr(feature_cases, "CHECK_WINDOW_SIZE", (24, 0))
    monkeypatch.setattr(feature_cases, "CHECK_VARLEN_SEQLENS", (20, 1, 39, 7))
    monkeypatch.setattr(feature_cases, "CHECK_DENSE_SEQLEN", 33)
    windows = []

    def unbounded(window):
        windows.append(window)
        return tuple(-1 if w is None else w for w in window)

    def fa4_func(q, k, v, softmax_scale=None, causal=False, window_size=(None, None)):
        return flash(q, k, v, softmax_scale=softmax_scale, causal=causal, window_size=unbounded(window_size),
                     backend="torch"), None

    def fa4_varlen(q, k, v, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None,
                   softmax_scale=None, causal=False, window_size=(None, None)):
        return varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, softmax_scale=softmax_scale,
                      causal=causal, window_size=unbounded(window_size), backend="torch"), None

    package, cute = types.ModuleType("flash_attn"), types.ModuleType("flash_attn.cute")
    cute.flash_attn_func, cute.flash_attn_varlen_func = fa4_func, fa4_varlen
    package.cute = cute
    monkeypatch.setitem(sys.modules, "flash_attn", package)
    monkeypatch.setitem(sys.modules, "flash_attn.cute", cute)
    return types.SimpleNamespace(fa3lite=fa3lite, flash=flash, varlen=varlen, windows=windows)


def _tiny_cases(modes=grid.MODES):
    spec = grid.make_spec("quick", head_dims=(16,), modes=modes, tokens=256, width=32)
    return spec, build_feature_cases(spec, window_seqlen=128, window=(32, 0), varlen_max_seqlen=64)


def _feature_run(impl_names=("fa3lite", "cudnn", "fa4"), modes=grid.MODES, **kw):
    spec, cases = _tiny_cases(modes)
    impls = select_impls(impl_names)
    absent = {i.name: reason for i in impls if (reason := i.probe())}
    runner = FeatureRunner(impls, spec.modes, kw.pop("timer", FakeTimer()), "cpu", l2_bytes=4096,
                           absent=kw.pop("absent", absent), **kw)
    return runner, runner.run(cases), cases


def _status_by(rows, impl):
    return {(m.case.kind, m.case.causal, m.mode): m.status for m in rows if m.impl == impl}


def test_runner_checks_then_times_fa3lite_and_fa4_and_cudnn_is_unsupported(cpu_fa3lite):
    timer = FakeTimer()
    runner, rows, cases = _feature_run(timer=timer)
    assert set(_status_by(rows, "fa3lite").values()) == {OK}
    assert len(_status_by(rows, "fa3lite")) == len(cases) * 3
    assert set(_status_by(rows, "fa4").values()) == {OK}
    assert {k for k, _, _ in _status_by(rows, "fa4")} == {WINDOW, VARLEN}  # no dense comparator for peers
    assert set(_status_by(rows, BASELINE).values()) == {UNSUPPORTED}
    assert all("window" in m.reason for m in rows if m.impl == BASELINE)
    assert (32, 0) in cpu_fa3lite.windows and (None, None) in cpu_fa3lite.windows  # FA4 spells -1 as None
    assert {c.status for c in runner.checks} == {OK, UNSUPPORTED}
    assert any("window" in c.detail and "[bwd]" in c.detail for c in runner.checks if c.impl == "fa3lite")
    timed = [m for m in rows if m.status == OK]
    assert all(m.stats.median == 2.0 and m.tflops == pytest.approx(m.case.flops(m.mode) / 2e-3 / 1e12)
               for m in timed)
    assert [m.impl for m in rows[:3]] == ["fa3lite"] * 3  # table order, though fa3lite ran last
    run = BenchRun(meta={}, config={}, features=rows)
    by = {(r["impl"], r["kind"], r["mask"], r["mode"]): r for r in report.feature_rows(run)}
    assert by[("fa3lite", VARLEN, "causal", "fwd")]["ratio_to_best_peer"] == pytest.approx(1.0)
    assert by[("fa3lite", VARLEN, "causal", "fwd")]["dense_ratio"] is not None


def test_runner_times_each_case_in_rotated_rounds(cpu_fa3lite):
    """rounds=3: every timed row pools three timings; within a case the peers' jobs go first in
    round 1, fa3lite's first in round 2 (rotated one place), the peers' again in round 3 -- the
    grid's order (runner._rotated)."""
    class CountingTimer(FakeTimer):
        def time(self, step, n_sets, context):
            super().time(step, n_sets, context)
            return [float(self.calls)]   # the call's index, counted from 1

    timer = CountingTimer()
    _, rows, cases = _feature_run(("fa3lite", "fa4"), timer=timer, rounds=3)
    timed = [m for m in rows if m.status == OK]
    assert timed and all(m.stats.reps == 3 for m in timed) and timer.calls == 3 * len(timed)
    k = len(grid.MODES)
    for case in cases:
        mine = [m for m in timed if m.case == case]
        first = min(m.stats.median for m in mine)   # the median of the job timed first in round 2
        got = {(m.impl, m.mode, m.stats.median - first) for m in mine}
        if case.kind in (WINDOW, VARLEN):   # fa4 (k jobs) then fa3lite: medians 3k + j and 2k + j
            want = {("fa4", mode, k + j) for j, mode in enumerate(grid.MODES)}
            want |= {("fa3lite", mode, j) for j, mode in enumerate(grid.MODES)}
        else:   # fa3lite alone: calls j, k + j, 2k + j
            want = {("fa3lite", mode, j) for j, mode in enumerate(grid.MODES)}
        assert got == want, case.label


def test_runner_job_refused_while_timed_sits_out_the_later_rounds(cpu_fa3lite):
    """A timing that raises (an OOM under the timer) is that job's row; the further rounds time the
    other jobs and skip it instead of failing the run."""
    class OomFirst(FakeTimer):
        refused = 0

        def time(self, step, n_sets, context):
            if not self.refused:
                self.refused = 1
                raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
            return super().time(step, n_sets, context)

    timer = OomFirst()
    _, rows, _ = _feature_run(("fa3lite",), timer=timer, rounds=2)
    assert rows[0].status == OOM and "out of memory" in rows[0].reason
    assert all(m.status == OK and m.stats.reps == 6 for m in rows[1:])
    assert timer.calls == 2 * (len(rows) - 1)


def test_runner_wrong_answer_is_recorded_and_not_timed(cpu_fa3lite, monkeypatch):
    monkeypatch.setattr(cpu_fa3lite.fa3lite, "flash_attn_varlen_func", _forced_torch(cpu_fa3lite.varlen, 1.3))
    timer = FakeTimer()
    _, rows, _ = _feature_run(("fa3lite",), timer=timer)
    st = _status_by(rows, "fa3lite")
    assert {v for (kind, _, _), v in st.items() if kind == VARLEN} == {WRONG}
    assert {v for (kind, _, _), v in st.items() if kind != VARLEN} == {OK}
    assert all("out err" in m.reason for m in rows if m.case.kind == VARLEN and m.mode == "fwd")
    assert timer.calls == sum(m.status == OK for m in rows)  # one timing per timed row, none for the wrong


def test_runner_absent_peer_and_time_budget(cpu_fa3lite):
    now = [0.0]

    class SlowTimer(FakeTimer):
        def time(self, step, n_sets, context):
            now[0] += 10.0
            return super().time(step, n_sets, context)

    _, rows, cases = _feature_run(absent={"fa4": "flash-attn-4 not installed"}, timer=SlowTimer(), deadline=25.0,
                                  clock=lambda: now[0], modes=("fwd",))
    assert set(_status_by(rows, "fa4").values()) == {ABSENT}
    fa3 = [m for m in rows if m.impl == "fa3lite"]
    assert [m.status for m in fa3[:3]] == [OK, OK, OK] and fa3[-1].status == SKIPPED
    assert all(m.reason == TIME_BUDGET_REASON for m in fa3 if m.status == SKIPPED)


def test_runner_after_a_lost_context_skips_everything(cpu_fa3lite):
    timer = FakeTimer()
    runner, rows, _ = _feature_run(fatal="CUDA context lost after fa3lite at d=64 full S=1024", timer=timer)
    assert {m.status for m in rows} == {SKIPPED} and timer.steps == 0 and not runner.checks
    assert all("CUDA context lost" in m.reason for m in rows)


def test_peers_apply_to_window_and_varlen_only():
    dense = FeatureCase(DENSE, 64, 2, True, NO_WINDOW, (8, 8), "bf16")
    win = FeatureCase(WINDOW, 64, 2, True, (4, 0), (8,), "bf16")
    assert applies("fa3lite", dense) and applies("fa3lite_det", win)
    assert applies("fa4", win) and applies(BASELINE, win) and not applies("fa4", dense)
    assert not applies("flex", win)


# ---- JSON and table from hand-made rows ------------------------------------------------------------------


def _hand_made_run():
    win = FeatureCase(WINDOW, 128, 16, True, (4096, 0), (16384,), "bf16")
    varlen = FeatureCase(VARLEN, 128, 16, True, NO_WINDOW, (4000, 3000, 5000, 4384), "bf16")
    dense = FeatureCase(DENSE, 128, 16, True, NO_WINDOW, (4096,) * 4, "bf16")
    rows = [
        FeatureMeasurement("fa3lite", win, "fwd", OK, Stats(1.0, 0.9, 1.1, 30), deterministic=False),
        FeatureMeasurement(BASELINE, win, "fwd", UNSUPPORTED, reason="NotImplementedError: no window"),
        FeatureMeasurement("fa4", win, "fwd", OK, Stats(1.25, 1.2, 1.3, 30)),
        FeatureMeasurement("fa3lite", varlen, "fwd", OK, Stats(2.0, 1.9, 2.1, 30), deterministic=False),
        FeatureMeasurement(BASELINE, varlen, "fwd", UNSUPPORTED, reason="NotImplementedError: no window"),
        FeatureMeasurement("fa4", varlen, "fwd", WRONG, reason="out err 1 > bound 0.1"),
        FeatureMeasurement("fa3lite", dense, "fwd", OK, Stats(1.5, 1.4, 1.6, 30), deterministic=False),
    ]
    grid_cell = grid.build_grid(grid.make_spec("quick", causal=(True,), seqlens=(1024,)))[0]
    run = BenchRun(meta={"device": "NVIDIA H100"}, config={"dtype": "bf16", "tokens": 16384},
                   measurements=[Measurement("fa3lite", grid_cell, "fwd", OK, Stats(1.0, 0.9, 1.1, 30))],
                   features=rows)
    return run, (win, varlen, dense)


LABELS = {"fa3lite": "fa3lite", BASELINE: "cuDNN", "fa4": "FA4"}


def test_feature_rows_in_json(tmp_path):
    run, (win, varlen, dense) = _hand_made_run()
    path = tmp_path / "results.json"
    report.write_json(path, run)
    data = json.loads(path.read_text())
    assert len(data["results"]) == 1 and "kind" not in data["results"][0]  # the grid's rows as before
    rows = data["features"]
    assert len(rows) == len(run.features)
    first = rows[0]
    assert set(first) == {
        "impl", "kind", "head_dim", "heads", "mask", "window", "tokens", "n_seqs", "max_seqlen", "seqlens",
        "dtype", "mode", "status", "ms_median", "ms_p20", "ms_p80", "reps", "gflop", "tflops", "reason",
        "deterministic", "ratio_to_best_peer", "dense_ratio"}
    assert (first["kind"], first["window"], first["tokens"], first["n_seqs"]) == (WINDOW, [4096, 0], 16384, 1)
    assert first["gflop"] == pytest.approx(win.flops("fwd") / 1e9)
    assert first["tflops"] == pytest.approx(win.flops("fwd") / 1e-3 / 1e12)
    assert first["ratio_to_best_peer"] == pytest.approx(1.25) and first["dense_ratio"] is None
    fa3_varlen = rows[3]
    assert fa3_varlen["ratio_to_best_peer"] is None  # FA4 was wrong there: no peer ran
    want = (varlen.flops("fwd") / 2.0) / (dense.flops("fwd") / 1.5)
    assert fa3_varlen["dense_ratio"] == pytest.approx(want)
    assert fa3_varlen["seqlens"] == [4000, 3000, 5000, 4384]
    assert rows[1]["status"] == UNSUPPORTED and rows[1]["tflops"] is None and "deterministic" not in rows[1]
    assert rows[2]["ratio_to_best_peer"] is None  # a peer's row carries no ratio
    assert rows[6]["kind"] == DENSE and rows[6]["dense_ratio"] is None


def test_feature_table_section():
    run, (win, varlen, dense) = _hand_made_run()
    text = report.format_features(run, LABELS)
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("kind"))
    assert header.split("|")[1].split() == ["fa3lite", "cuDNN", "FA4"]
    win_line = next(line for line in lines if line.startswith("window"))
    assert "(4096, 0)" in win_line and "unsup" in win_line and "1.25x" in win_line
    varlen_line = next(line for line in lines if line.startswith("varlen"))
    assert "WRONG" in varlen_line and varlen_line.split()[-2] == "-"
    assert varlen_line.split()[-1] == f"{(varlen.flops('fwd') / 2.0) / (dense.flops('fwd') / 1.5):.2f}x"
    assert "FA4 WRONG [fwd] at varlen d=128 causal: out err 1 > bound 0.1" in text
    assert "cuDNN unsup [fwd] at window d=128 causal, varlen d=128 causal" in text
    table_lines = [line for line in lines if "|" in line]
    assert len({len(line) for line in table_lines}) == 1  # aligned columns
    full = report.format_report(run, LABELS, "B=1")
    assert "Feature rows:" in full
    assert "Feature rows" not in report.format_report(BenchRun(meta={}, config={}, measurements=run.measurements),
                                                      LABELS, "B=1")


def test_csv_keeps_the_grid_rows_only(tmp_path):
    run, _ = _hand_made_run()
    path = tmp_path / "results.csv"
    report.write_csv(path, run)
    assert len(path.read_text().splitlines()) == 1 + len(run.measurements)


# ---- the command line --------------------------------------------------------------------------------------


def test_no_features_switch():
    assert cli.parse_args([]).features and cli.parse_args(["--full"]).features
    assert not cli.parse_args(["--no-features"]).features
    help_text = cli.build_parser().format_help()
    assert "--no-features" in help_text and "sliding window" in help_text


# ---- on the GPU ----------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_feature_rows_end_to_end_on_the_gpu(tmp_path):
    out = tmp_path / "o"
    status = cli.main(["--quick", "--head-dim", "64", "--seqlen", "1k", "--tokens", "4096", "--width", "256",
                       "--impl", "fa3lite,cudnn,fa4", "--reps", "20", "--warmup", "1", "--no-host-time",
                       "--no-compile-time", "--no-plots", "--out", str(out)])
    assert status == cli.EXIT_OK
    data = json.loads((out / "results.json").read_text())
    rows = data["features"]
    mine = [r for r in rows if r["impl"] == "fa3lite"]
    assert {r["kind"] for r in mine} == {WINDOW, VARLEN, DENSE}
    assert all(r["status"] == OK and r["tflops"] > 0 for r in mine), [r["reason"] for r in mine]
    assert all(r["dense_ratio"] > 0 for r in mine if r["kind"] == VARLEN)
    assert {r["status"] for r in rows if r["impl"] == BASELINE} == {UNSUPPORTED}
    fa4_ok = {(r["kind"], r["mask"], r["mode"]) for r in rows if r["impl"] == "fa4" and r["status"] == OK}
    assert all((r["ratio_to_best_peer"] is not None) == ((r["kind"], r["mask"], r["mode"]) in fa4_ok) for r in mine)
    assert "Feature rows:" in (out / "table.txt").read_text()
