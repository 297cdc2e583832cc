"""CPU tests of the benchmark's decode grid (python -m fa3lite.bench --decode): the cases and presets,
the byte and bandwidth arithmetic, the shuffled page table and the cache layouts, the reference,
the runner with a fake timer over fa3lite's torch fallback (backend "auto" on the CPU) and a
stand-in FA4, the JSON and table of hand-made rows, the command line, and the whole decode run
writing its files. One GPU test runs the command line at a tiny decode configuration."""
from __future__ import annotations

import functools
import json
import sys
import types

import pytest
import torch

from fa3lite.bench import cli, decode, decode_cases, decode_run, report, timing
from fa3lite.bench.decode import DecodeRunner, decode_sets, measure_copy_bandwidth
from fa3lite.bench.decode_cases import (
    CACHE_LENS,
    CHECK_BATCH,
    CONTIGUOUS,
    PAGE_SIZES,
    DecodeCase,
    DecodeSpec,
    achieved_gbs,
    build_decode_cases,
    copy_gbs,
    make_decode_spec,
)
from fa3lite.bench.decode_impls import DECODE_IMPL_NAMES, select_decode_impls
from fa3lite.bench.decode_inputs import (
    decode_reference,
    logical_kv,
    make_inputs,
    row_indices,
    shuffled_page_table,
    with_stale_tail,
)
from fa3lite.bench.results import (
    ABSENT,
    OK,
    SKIPPED,
    UNSUPPORTED,
    WRONG,
    BenchRun,
    DecodeMeasurement,
    Measurement,
)
from fa3lite.bench.runner import TIME_BUDGET_REASON
from fa3lite.bench.timing import Stats

# ---- cases and presets ---------------------------------------------------------------------------------


def test_full_grid_is_the_issues_grid():
    cases = build_decode_cases(make_decode_spec())
    assert len(cases) == 2 * 3 * 4 * 2 * 4 == 192
    assert len(set(cases)) == len(cases)
    assert {c.sq for c in cases} == {1, 4} and {c.batch for c in cases} == {1, 8, 64}
    assert {c.cache_len for c in cases} == {1024, 8192, 32768, 131072} == set(CACHE_LENS)
    assert {(c.heads_q, c.heads_kv) for c in cases} == {(32, 8), (64, 8)}
    assert {c.page_size for c in cases} == {CONTIGUOUS, 16, 64, 256} and PAGE_SIZES == (16, 64, 256)
    assert {c.layout for c in cases} == {"contiguous", "paged16", "paged64", "paged256"}
    assert {(c.head_dim, c.dtype) for c in cases} == {(128, "bf16")}
    # A shape's layouts sit next to each other, contiguous first.
    assert [c.page_size for c in cases[:4]] == [CONTIGUOUS, 16, 64, 256]
    assert len({c.cache_len for c in cases[:4]}) == 1


def test_quick_preset_is_a_small_subset():
    quick = build_decode_cases(make_decode_spec("quick"))
    assert len(quick) == 8
    assert set(quick) <= set(build_decode_cases(make_decode_spec()))
    assert {c.sq for c in quick} == {1} and {c.batch for c in quick} == {1, 8}
    assert {c.cache_len for c in quick} == {8192, 131072} and {c.page_size for c in quick} == {CONTIGUOUS, 64}
    assert make_decode_spec("quick", "fp16").dtype == "fp16"
    with pytest.raises(ValueError, match="preset"):
        make_decode_spec("tiny")
    with pytest.raises(ValueError, match="dtype"):
        make_decode_spec("full", "fp8")


@pytest.mark.parametrize("kwargs, word", [
    (dict(sq=0), "sq"), (dict(batch=0), "batch"), (dict(cache_len=-1), "cache_len"),
    (dict(heads_kv=3), "heads_kv"), (dict(page_size=-16), "page_size"), (dict(sq=8, cache_len=4), "sq"),
    (dict(dtype="fp32"), "dtype"),
])
def test_case_rejects(kwargs, word):
    base = dict(sq=1, batch=2, cache_len=64, heads_q=4, heads_kv=2, head_dim=16, page_size=CONTIGUOUS)
    with pytest.raises(ValueError, match=word):
        DecodeCase(**{**base, **kwargs})


def test_pages_and_reduced_case():
    case = DecodeCase(4, 64, 131072, 64, 8, 128, 256)
    assert case.paged and case.pages_per_seq == 512
    assert DecodeCase(1, 1, 1000, 32, 8, 128, 64).pages_per_seq == 16  # the last page partly filled
    assert DecodeCase(1, 1, 1000, 32, 8, 128, CONTIGUOUS).pages_per_seq == 0
    small = case.reduced()
    assert (small.cache_len, small.batch) == (decode_cases.CHECK_CACHE_LEN, CHECK_BATCH)
    assert (small.sq, small.heads_q, small.heads_kv, small.page_size) == (4, 64, 8, 256)
    tiny = DecodeCase(1, 1, 100, 4, 2, 16, 16)
    assert tiny.reduced() == tiny


# ---- bytes and bandwidth -------------------------------------------------------------------------------


def test_kv_bytes_and_bandwidth_arithmetic():
    case = DecodeCase(1, 64, 131072, 32, 8, 128, CONTIGUOUS)
    assert case.kv_bytes == 64 * 131072 * 8 * 128 * 2 * 2 == 34_359_738_368
    assert DecodeCase(4, 64, 131072, 64, 8, 128, 16).kv_bytes == case.kv_bytes  # q heads, Sq, pages: no bytes
    assert achieved_gbs(case.kv_bytes, 10.0) == pytest.approx(3435.9738368)
    assert copy_gbs(2**30, 1.0) == pytest.approx(2 * 2**30 / 1e-3 / 1e9)  # read + written
    with pytest.raises(ValueError, match="ms"):
        achieved_gbs(1, 0.0)
    m = DecodeMeasurement("fa3lite", case, OK, Stats(10.0, 9.0, 11.0, 30))
    assert m.gbs == pytest.approx(3435.9738368)
    assert DecodeMeasurement("fa3lite", case, WRONG, reason="x").gbs is None
    with pytest.raises(ValueError, match="stats"):
        DecodeMeasurement("fa3lite", case, OK)


def test_decode_sets_rotate_past_l2_within_memory():
    l2 = 50 * 2**20
    assert decode_sets(34_359_738_368, l2) == 1           # the biggest case: a single copy
    assert decode_sets(4 * 2**20, l2) == 50                # B=1, 1k: 4 MB a set, 4 x L2 together
    assert decode_sets(1, l2) == decode.DECODE_MAX_SETS
    with pytest.raises(ValueError, match="set_bytes"):
        decode_sets(0, l2)


class FakeTimer:
    """Runs each step once per input set and returns fixed times; host time fixed too."""

    def __init__(self, warmup=0, reps=3, ms=2.0):
        self.ms, self.calls, self.steps, self.host_calls = ms, 0, 0, 0

    def time(self, step, n_sets, context=None):
        self.calls += 1
        with (context or _null)():
            for i in range(n_sets):
                step(i)
                self.steps += 1
        return [self.ms * 0.9, self.ms, self.ms * 1.1]

    def time_graphed(self, step, n_sets, context=None):
        self.graphed = getattr(self, "graphed", 0) + 1
        return self.time(step, n_sets, context)

    def host_time(self, call, context=None):
        self.host_calls += 1
        with (context or _null)():
            call()
        return 11.0, 13.0


def _null():
    import contextlib

    return contextlib.nullcontext()


def test_copy_bandwidth_counts_read_and_written_bytes():
    gbs = measure_copy_bandwidth(FakeTimer(ms=0.5), "cpu", nbytes=1000)
    assert gbs == pytest.approx(2 * 1000 / 0.5e-3 / 1e9)


# ---- page table, layouts, reference --------------------------------------------------------------------


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_page_table_is_a_permutation_of_exactly_the_needed_pages():
    table = shuffled_page_table(3, 5, _gen(), "cpu")
    assert table.shape == (3, 5) and table.dtype == torch.int32
    assert sorted(table.flatten().tolist()) == list(range(15))
    assert not torch.equal(table.flatten(), torch.arange(15, dtype=torch.int32))  # shuffled
    assert torch.equal(table, shuffled_page_table(3, 5, _gen(), "cpu"))         # fixed seed
    with pytest.raises(ValueError, match="pages_per_seq"):
        shuffled_page_table(3, 0, _gen(), "cpu")


@pytest.mark.parametrize("page", [CONTIGUOUS, 16, 64])
def test_inputs_layout_rows_and_appended_rows(page):
    case = DecodeCase(4, 3, 40, 4, 2, 16, page)
    x = make_inputs(case, "cpu", _gen())
    assert x.q.shape == (3, 4, 4, 16) and x.q.dtype == torch.bfloat16
    if page:
        assert x.k_cache.shape == (3 * case.pages_per_seq, page, 2, 16)
        assert x.page_table.shape == (3, case.pages_per_seq)
    else:
        assert x.k_cache.shape == (3, 40, 2, 16) and x.page_table is None
    assert x.cache_seqlens.tolist() == [40] * 3 and x.append_at.tolist() == [36] * 3
    logical = logical_kv(case, x.k_cache, x.page_table)
    assert logical.shape == (3, 40, 2, 16)
    flat = row_indices(case, x.page_table, torch.arange(40))
    assert torch.equal(x.k_cache.reshape(-1, 2, 16)[flat], logical)
    assert len(set(flat.flatten().tolist())) == 3 * 40            # no row shared between batch rows
    assert torch.equal(x.k_new, logical[:, -4:])                   # appending rewrites the same values
    assert torch.equal(x.v_new, logical_kv(case, x.v_cache, x.page_table)[:, -4:])


def test_stale_tail_zeroes_exactly_the_appended_rows():
    case = DecodeCase(4, 2, 40, 4, 2, 16, 16)
    x = make_inputs(case, "cpu", _gen())
    stale = with_stale_tail(case, x)
    before, after = (logical_kv(case, t.k_cache, t.page_table) for t in (x, stale))
    assert torch.equal(after[:, :36], before[:, :36]) and not after[:, 36:].any()
    assert before[:, 36:].any()                                    # the original is untouched


def test_reference_is_bottom_right_causal_gqa_attention():
    case = DecodeCase(4, 2, 12, 4, 2, 8, 8)
    x = make_inputs(case, "cpu", _gen(1))
    got = decode_reference(case, x, torch.float64)
    k, v = (logical_kv(case, c, x.page_table).double() for c in (x.k_cache, x.v_cache))
    want = torch.zeros(2, 4, 4, 8, dtype=torch.float64)
    for b in range(2):
        for h in range(4):
            for i in range(4):
                keys = 12 - 4 + i + 1                              # query i sees keys 0 .. L - Sq + i
                s = k[b, :keys, h // 2] @ x.q[b, i, h].double() * 8 ** -0.5
                want[b, i, h] = torch.softmax(s, 0) @ v[b, :keys, h // 2]
    torch.testing.assert_close(got, want.float())


# ---- the runner, on the CPU ----------------------------------------------------------------------------


def _stand_in_fa4(monkeypatch, split_error=None, with_kvcache=None):
    """A flash_attn.cute module over fa3lite's torch fallback: flash_attn_varlen_func taking
    seqused_k/page_table (raising split_error when asked for num_splits=0), and optionally a
    flash_attn_with_kvcache. Returns the list of num_splits values it was called with."""
    import fa3lite

    splits = []

    def varlen(q, k, v, seqused_k=None, page_table=None, softmax_scale=None, causal=False, num_splits=1):
        splits.append(num_splits)
        if num_splits == 0 and split_error is not None:
            raise split_error
        return fa3lite.flash_attn_with_kvcache(q, k, v, cache_seqlens=seqused_k, page_table=page_table,
                                               softmax_scale=softmax_scale, causal=causal, backend="torch"), None

    package, cute = types.ModuleType("flash_attn"), types.ModuleType("flash_attn.cute")
    cute.flash_attn_varlen_func = varlen
    if with_kvcache is not None:
        cute.flash_attn_with_kvcache = with_kvcache
    package.cute = cute
    monkeypatch.setitem(sys.modules, "flash_attn", package)
    monkeypatch.setitem(sys.modules, "flash_attn.cute", cute)
    return splits


@pytest.fixture
def small_checks(monkeypatch):
    """Checks at a 64-row cache (the CPU reference stays quick)."""
    monkeypatch.setattr(decode_cases, "CHECK_CACHE_LEN", 64)


def _tiny_cases():
    return [DecodeCase(sq, 3, length, 4, 2, 16, page) for sq in (1, 4) for length in (40, 96, 128)
            for page in (CONTIGUOUS, 16)]


def _decode_run(impl_names=None, cases=None, **kw):
    impls = select_decode_impls(impl_names, fa3lite_backend="auto")
    absent = kw.pop("absent", None)
    if absent is None:
        absent = {i.name: reason for i in impls if (reason := i.probe())}
    runner = DecodeRunner(impls, kw.pop("timer", FakeTimer()), "cpu", l2_bytes=4096, absent=absent, **kw)
    return runner, runner.run(cases or _tiny_cases())


def _status_by(rows, impl):
    return {m.case: m.status for m in rows if m.impl == impl}


def test_runner_checks_then_times_and_cudnn_refuses_the_cpu(small_checks, monkeypatch):
    splits = _stand_in_fa4(monkeypatch)
    timer = FakeTimer()
    runner, rows = _decode_run(timer=timer)
    cases = _tiny_cases()
    for name in ("fa3lite", "fa3lite_append", "sdpa", "fa4"):
        assert set(_status_by(rows, name).values()) == {OK}, [m.reason for m in rows if m.impl == name]
    assert set(_status_by(rows, "cudnn").values()) == {UNSUPPORTED}
    assert len(rows) == len(cases) * len(DECODE_IMPL_NAMES)
    assert timer.calls == sum(m.status == OK for m in rows)
    assert [m.impl for m in rows[:5]] == list(DECODE_IMPL_NAMES)  # table order, though fa3lite ran last
    assert all(m.stats.median == 2.0 for m in rows if m.status == OK)
    # One check per (implementation, reduced case): L = 96 and 128 share their check at 64 rows.
    reduced = {c.reduced() for c in cases}
    assert len(runner.checks) == len(reduced) * len(DECODE_IMPL_NAMES)
    assert {c.seqlen for c in runner.checks} == {40, 64}
    assert all("paged16" in c.detail or "contiguous" in c.detail for c in runner.checks)
    assert set(splits) == {0} and not runner.notes()               # FA4 asked for its split heuristic
    assert timer.graphed == timer.calls                              # every row timed from graph replays


def test_an_implementation_that_cannot_be_captured_is_timed_eagerly(small_checks, monkeypatch):
    _stand_in_fa4(monkeypatch)

    class NoGraphs(FakeTimer):
        def time_graphed(self, step, n_sets, context=None):
            raise RuntimeError("operation not permitted when stream is capturing")

    timer = NoGraphs()
    runner, rows = _decode_run(impl_names=["sdpa", "fa3lite"], timer=timer)
    assert {m.status for m in rows} == {OK} and timer.calls == len(rows)
    notes = runner.notes()
    assert len(notes) == 2 and all("timed eagerly" in n and "capturing" in n for n in notes), notes


def test_fa4_without_split_falls_back_once_and_says_so(small_checks, monkeypatch):
    splits = _stand_in_fa4(monkeypatch, split_error=NotImplementedError("split KV not on sm90"))
    runner, rows = _decode_run(("fa4",))
    assert set(_status_by(rows, "fa4").values()) == {OK}
    assert splits[:2] == [0, 1] and set(splits[2:]) == {1}
    (note,) = runner.notes()
    assert "num_splits=0" in note and "split KV not on sm90" in note


def test_fa4_kvcache_entry_is_preferred_and_a_type_error_is_unsupported(small_checks, monkeypatch):
    def kvcache(q, k_cache, v_cache, cache_seqlens=None, block_table=None, softmax_scale=None, causal=False):
        raise AssertionError("not reached: page_table is not a keyword of this signature")

    splits = _stand_in_fa4(monkeypatch, with_kvcache=kvcache)
    _, rows = _decode_run(("fa4",))
    assert set(_status_by(rows, "fa4").values()) == {UNSUPPORTED} and not splits
    assert all("TypeError" in m.reason and "page_table" in m.reason for m in rows)


def _wrapped_kvcache(monkeypatch, change):
    """fa3lite.flash_attn_with_kvcache with its keyword arguments changed by change(kwargs)."""
    import fa3lite

    real = fa3lite.flash_attn_with_kvcache

    @functools.wraps(real)
    def call(*args, **kwargs):
        return real(*args, **change(kwargs))

    monkeypatch.setattr(fa3lite, "flash_attn_with_kvcache", call)


def test_wrong_answer_is_recorded_and_not_timed(small_checks, monkeypatch):
    _wrapped_kvcache(monkeypatch, lambda kw: {**kw, "softmax_scale": kw["softmax_scale"] * 1.3})
    timer = FakeTimer()
    _, rows = _decode_run(("fa3lite", "fa3lite_append", "sdpa"), timer=timer)
    assert set(_status_by(rows, "fa3lite").values()) == {WRONG}
    assert set(_status_by(rows, "fa3lite_append").values()) == {WRONG}
    assert set(_status_by(rows, "sdpa").values()) == {OK}
    assert all("out err" in m.reason for m in rows if m.status == WRONG)
    assert timer.calls == len(_tiny_cases())                        # SDPA's rows only


def test_append_that_writes_nothing_is_wrong(small_checks, monkeypatch):
    import fa3lite

    real = fa3lite.flash_attn_with_kvcache

    def forgetful(q, k_cache, v_cache, k=None, v=None, **kwargs):
        kwargs["cache_seqlens"] = kwargs["cache_seqlens"] + (0 if k is None else k.shape[1])
        return real(q, k_cache, v_cache, **kwargs)                 # attends as if it had appended

    monkeypatch.setattr(fa3lite, "flash_attn_with_kvcache", forgetful)
    _, rows = _decode_run(("fa3lite", "fa3lite_append"))
    assert set(_status_by(rows, "fa3lite").values()) == {OK}
    assert set(_status_by(rows, "fa3lite_append").values()) == {WRONG}


def test_absent_time_budget_and_lost_context(small_checks):
    now = [0.0]

    class SlowTimer(FakeTimer):
        def time(self, step, n_sets, context=None):
            now[0] += 10.0
            return super().time(step, n_sets, context)

    _, rows = _decode_run(("fa3lite", "sdpa", "fa4"), absent={"fa4": "flash-attn-4 not installed"},
                          timer=SlowTimer(), deadline=25.0, clock=lambda: now[0])
    assert set(_status_by(rows, "fa4").values()) == {ABSENT}
    mine = [m for m in rows if m.impl == "fa3lite"]
    assert mine[0].status == OK and mine[-1].status == SKIPPED
    assert all(m.reason == TIME_BUDGET_REASON for m in rows if m.status == SKIPPED)
    timer = FakeTimer()
    runner = DecodeRunner(select_decode_impls(("sdpa",)), timer, "cpu", l2_bytes=4096)
    runner.fatal = "CUDA context lost after fa3lite at Sq=1"
    rows = runner.run(_tiny_cases()[:2])
    assert {m.status for m in rows} == {SKIPPED} and timer.steps == 0 and not runner.checks


def test_host_times_after_a_check(small_checks):
    impls = select_decode_impls(("fa3lite", "sdpa", "cudnn", "fa4"), fa3lite_backend="auto")
    timer = FakeTimer()
    runner = DecodeRunner(impls, timer, "cpu", l2_bytes=4096, absent={"fa4": "flash-attn-4 not installed"})
    hosts = {h.impl: h for h in runner.host_times(DecodeCase(1, 1, 64, 4, 2, 16, CONTIGUOUS))}
    assert (hosts["fa3lite"].status, hosts["fa3lite"].host_us, hosts["fa3lite"].wall_us) == (OK, 11.0, 13.0)
    assert hosts["sdpa"].status == OK and hosts["fa3lite"].mode == "fwd"
    assert hosts["cudnn"].status == UNSUPPORTED and hosts["fa4"].status == ABSENT
    assert timer.host_calls == 2 and decode.HOST_CASE.cache_len == 1024 and decode.HOST_CASE.batch == 1
    # seconds of work, measured before the grid: a spent time budget does not skip it; a lost context does
    spent = DecodeRunner(impls, FakeTimer(), "cpu", l2_bytes=4096, absent={"fa4": "x"}, deadline=0.0,
                         clock=lambda: 1.0)
    assert {h.impl: h.status for h in spent.host_times()}["fa3lite"] == OK
    spent.fatal = "CUDA context lost"
    assert {h.status for h in spent.host_times() if h.impl != "fa4"} == {SKIPPED}


# ---- JSON and table from hand-made rows ----------------------------------------------------------------

LABELS = {"fa3lite": "fa3lite", "fa3lite_append": "fa3lite+append", "sdpa": "SDPA", "cudnn": "cuDNN", "fa4": "FA4"}


def _hand_made_run():
    long = DecodeCase(1, 8, 32768, 32, 8, 128, 64)
    short = DecodeCase(4, 1, 1024, 64, 8, 128, CONTIGUOUS)
    rows = [
        DecodeMeasurement("fa3lite", long, OK, Stats(2.0, 1.9, 2.1, 30)),
        DecodeMeasurement("fa3lite_append", long, OK, Stats(2.5, 2.4, 2.6, 30)),
        DecodeMeasurement("sdpa", long, OK, Stats(5.0, 4.9, 5.1, 30)),
        DecodeMeasurement("cudnn", long, UNSUPPORTED, reason="RuntimeError: no cuDNN kernel"),
        DecodeMeasurement("fa4", long, OK, Stats(2.5, 2.4, 2.6, 30)),
        DecodeMeasurement("fa3lite", short, WRONG, reason="out err 1 > bound 0.1"),
        DecodeMeasurement("fa3lite_append", short, OK, Stats(0.01, 0.01, 0.01, 30)),
        DecodeMeasurement("sdpa", short, OK, Stats(0.02, 0.02, 0.02, 30)),
        DecodeMeasurement("cudnn", short, OK, Stats(0.015, 0.015, 0.015, 30)),
        DecodeMeasurement("fa4", short, ABSENT, reason="flash-attn-4 not installed"),
    ]
    run = BenchRun(meta={"device": "NVIDIA H100"}, config={"decode": "full", "dtype": "bf16", "reps": 30},
                   decode=rows, copy_bandwidth_gbs=3000.0)
    return run, long, short


def test_decode_rows_in_json(tmp_path):
    run, long, short = _hand_made_run()
    path = tmp_path / "results.json"
    report.write_json(path, run)
    data = json.loads(path.read_text())
    assert data["copy_bandwidth_gbs"] == 3000.0 and data["results"] == [] and data["features"] == []
    rows = data["decode"]
    assert len(rows) == len(run.decode)
    first = rows[0]
    assert set(first) == {
        "impl", "sq", "batch", "cache_len", "heads_q", "heads_kv", "head_dim", "layout", "page_size", "dtype",
        "status", "ms_median", "ms_p20", "ms_p80", "reps", "kv_bytes", "gbs", "reason", "copy_fraction",
        "speedup_vs_sdpa", "speedup_vs_best_peer"}
    assert (first["layout"], first["page_size"], first["cache_len"]) == ("paged", 64, 32768)
    assert first["kv_bytes"] == 8 * 32768 * 8 * 128 * 4
    assert first["gbs"] == pytest.approx(first["kv_bytes"] / 2e-3 / 1e9)
    assert first["copy_fraction"] == pytest.approx(first["gbs"] / 3000.0)
    assert first["speedup_vs_sdpa"] == pytest.approx(2.5)
    assert first["speedup_vs_best_peer"] == pytest.approx(1.25)     # FA4 the fastest peer; cuDNN refused
    assert rows[1]["speedup_vs_best_peer"] is None and rows[1]["speedup_vs_sdpa"] == pytest.approx(2.0)
    assert rows[2]["speedup_vs_sdpa"] == pytest.approx(1.0) and rows[2]["speedup_vs_best_peer"] is None
    assert rows[3]["gbs"] is None and rows[3]["copy_fraction"] is None and rows[3]["speedup_vs_sdpa"] is None
    assert rows[5]["status"] == WRONG and rows[5]["speedup_vs_best_peer"] is None
    assert (rows[7]["layout"], rows[7]["page_size"]) == ("contiguous", None)


def test_dense_json_has_no_decode_keys(tmp_path):
    run = BenchRun(meta={}, config={"dtype": "bf16"})
    assert "decode" not in report.to_json(run) and "copy_bandwidth_gbs" not in report.to_json(run)


def test_decode_table_section():
    run, long, short = _hand_made_run()
    text = report.format_report(run, LABELS, "Sq=1, B=1, cache 1024")
    assert "3000 GB/s" in text and "bytes read + written" in text and "q/out not counted" in text
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("Sq"))
    assert header.split("|")[1].split() == ["fa3lite", "fa3lite+append", "SDPA", "cuDNN", "FA4"]
    assert header.split("|")[2].split() == ["GB/s", "vs", "SDPA", "vs", "peer"]
    long_line = next(line for line in lines if " 32768 " in line)
    gbs = long.kv_bytes / 2e-3 / 1e9
    assert f"2.000 {gbs / 3000 * 100:.0f}%" in long_line and "unsup" in long_line
    assert long_line.split()[-3:] == [f"{gbs:.0f}", "2.50x", "1.25x"]
    short_line = next(line for line in lines if " 1024 " in line and "|" in line)
    assert "WRONG" in short_line and "absent" in short_line and short_line.split()[-3:] == ["-", "-", "-"]
    table = [line for line in lines if line.count("|") == 2]
    assert len({len(line) for line in table}) == 1                   # aligned columns
    assert "fa3lite at caches >= 8192: 0 of 1 reach 80% of the copy bandwidth; 1 of 1 with a peer" in text
    assert "cuDNN unsup at Sq=1 B=8 L=32768" in text and "fa3lite WRONG at Sq=4 B=1 L=1024" in text
    assert "TFLOP/s" not in text.split("Decode:")[0]                 # the dense header is not printed


def test_dense_report_has_no_decode_section():
    from fa3lite.bench import grid

    cell = grid.build_grid(grid.make_spec("quick", causal=(True,), seqlens=(1024,)))[0]
    run = BenchRun(meta={}, config={"dtype": "bf16"}, measurements=[Measurement("fa3lite", cell, "fwd", OK,
                                                                                Stats(1.0, 0.9, 1.1, 30))])
    assert "Decode:" not in report.format_report(run, LABELS, "B=1")


# ---- the command line ------------------------------------------------------------------------------------


def test_decode_switches():
    assert cli.parse_args([]).decode is None
    assert cli.parse_args(["--decode"]).decode == "full"
    assert cli.parse_args(["--decode", "--quick"]).decode == "quick"
    assert cli.parse_args(["--decode-quick"]).decode == "quick"
    o = cli.parse_args(["--decode", "--impl", "fa3lite,sdpa,fa4", "--dtype", "fp16", "--time-budget", "60"])
    assert o.impls == ("fa3lite", "sdpa", "fa4") and o.spec.dtype == "fp16" and o.time_budget == 60
    help_text = cli.build_parser().format_help()
    assert "--decode" in help_text and "--decode-quick" in help_text and "fa3lite_append" in help_text


@pytest.mark.parametrize("argv, word", [
    (["--decode", "--impl", "fa2"], "impl"), (["--impl", "sdpa"], "impl"),
    (["--decode", "--deterministic"], "--deterministic"),
])
def test_decode_switch_rejects(argv, word, capsys):
    with pytest.raises(SystemExit) as e:
        cli.parse_args(argv)
    assert e.value.code == 2 and word in capsys.readouterr().err


def test_decode_run_writes_table_and_json_on_the_cpu(small_checks, monkeypatch, tmp_path):
    """The whole --decode run past the GPU gate: copy bandwidth, cases, host time, files."""
    monkeypatch.setattr(timing, "CudaTimer", FakeTimer)
    monkeypatch.setattr(timing, "l2_bytes", lambda device: 4096)
    monkeypatch.setattr(decode, "COPY_BYTES", 4096)
    monkeypatch.setattr(decode, "HOST_CASE", DecodeCase(1, 1, 64, 4, 2, 16, CONTIGUOUS))
    tiny = DecodeSpec((1, 4), (2,), (48,), ((4, 2),), (CONTIGUOUS, 16), head_dim=16)
    monkeypatch.setattr(decode_run, "make_decode_spec", lambda preset, dtype: tiny)
    monkeypatch.setattr(decode_run, "select_decode_impls",
                        functools.partial(select_decode_impls, fa3lite_backend="auto"))
    out = tmp_path / "o"
    opts = cli.parse_args(["--decode", "--out", str(out), "--impl", "fa3lite,fa3lite_append,sdpa,cudnn"])
    check = types.SimpleNamespace(lines=["tiny check ok"], ok=True)
    assert decode_run.run_decode(opts, check, 0.0, device="cpu") == cli.EXIT_OK
    data = json.loads((out / "results.json").read_text())
    assert data["config"]["decode"] == "full" and data["copy_bandwidth_gbs"] == pytest.approx(2 * 4096 / 2e-3 / 1e9)
    rows = data["decode"]
    assert len(rows) == 4 * 4
    assert {r["status"] for r in rows if r["impl"] != "cudnn"} == {OK}
    assert all(r["speedup_vs_sdpa"] == pytest.approx(1.0) for r in rows if r["status"] == OK)
    hosts = {h["impl"]: h for h in data["host_time"]}
    assert hosts["fa3lite"]["status"] == OK and hosts["cudnn"]["status"] == UNSUPPORTED
    assert data["checks"] and data["results"] == []
    text = (out / "table.txt").read_text()
    assert "Decode:" in text and "Host time per call at Sq=1, B=1, cache 64, Hq/Hk=4/2, d=16, contiguous" in text
    assert sorted(p.name for p in out.iterdir()) == ["results.json", "table.txt"]


def test_decode_run_exit_status_when_fa3lite_is_wrong(small_checks, monkeypatch, tmp_path):
    monkeypatch.setattr(timing, "CudaTimer", FakeTimer)
    monkeypatch.setattr(timing, "l2_bytes", lambda device: 4096)
    monkeypatch.setattr(decode, "COPY_BYTES", 4096)
    tiny = DecodeSpec((1,), (2,), (48,), ((4, 2),), (CONTIGUOUS,), head_dim=16)
    monkeypatch.setattr(decode_run, "make_decode_spec", lambda preset, dtype: tiny)
    monkeypatch.setattr(decode_run, "select_decode_impls",
                        functools.partial(select_decode_impls, fa3lite_backend="auto"))
    _wrapped_kvcache(monkeypatch, lambda kw: {**kw, "softmax_scale": kw["softmax_scale"] * 1.3})
    opts = cli.parse_args(["--decode", "--out", str(tmp_path), "--impl", "fa3lite", "--no-host-time"])
    check = types.SimpleNamespace(lines=[], ok=True)
    assert decode_run.run_decode(opts, check, 0.0, device="cpu") == cli.EXIT_FA3LITE_WRONG


# ---- on the GPU ----------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_decode_end_to_end_on_the_gpu(monkeypatch, tmp_path):
    tiny = DecodeSpec((1, 4), (2,), (1024, 8192), ((32, 8),), (CONTIGUOUS, 64))
    monkeypatch.setattr(decode_run, "make_decode_spec", lambda preset, dtype: tiny)
    out = tmp_path / "o"
    status = cli.main(["--decode", "--reps", "20", "--warmup", "1", "--out", str(out)])
    assert status == cli.EXIT_OK
    data = json.loads((out / "results.json").read_text())
    assert data["copy_bandwidth_gbs"] > 100
    mine = [r for r in data["decode"] if r["impl"] in ("fa3lite", "fa3lite_append")]
    assert len(mine) == 2 * 2 * 2 * 2
    assert all(r["status"] == OK and r["gbs"] > 0 and 0 < r["copy_fraction"] for r in mine), [r["reason"] for r in mine]
    assert {r["status"] for r in data["decode"] if r["impl"] == "sdpa"} == {OK}
    assert any(h["impl"] == "fa3lite" and h["status"] == OK for h in data["host_time"])
    assert "Decode:" in (out / "table.txt").read_text()
