"""CPU tests of fa3lite.bench: grid, FLOPs, reference rule, orchestration (fake timer), reports,
arguments, progress bar, plots and the no-GPU exit path."""
from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from fa3lite.bench import cli, compile_time, grid, report
from fa3lite.bench.flops import attention_flops, cell_flops, tflops
from fa3lite.bench.impls import BASELINE, Bound, Impl, all_impls, select_impls
from fa3lite.bench.progress import Progress
from fa3lite.bench.reference import (
    attention_math,
    check_against,
    fa3_verdict,
    head_reference,
    random_inputs,
    sample_heads,
)
from fa3lite.bench.results import (
    ABSENT,
    OK,
    OOM,
    SKIPPED,
    UNSUPPORTED,
    WRONG,
    BenchRun,
    CheckRecord,
    CompileTime,
    HostTime,
    Measurement,
)
from fa3lite.bench.runner import HOST_SHAPE, ODD_SEQLEN, TIME_BUDGET_REASON, GridRunner
from fa3lite.bench.timing import MAX_SETS, MIN_SETS, Stats, rotation_sets

REPO = Path(__file__).resolve().parent.parent


# ---- grid -------------------------------------------------------------------------------------

def test_quick_preset_is_d128_both_masks_three_lengths():
    cells = grid.build_grid(grid.make_spec("quick"))
    assert [(c.head_dim, c.causal, c.seqlen) for c in cells] == [
        (128, False, 1024), (128, False, 4096), (128, False, 16384),
        (128, True, 1024), (128, True, 4096), (128, True, 16384),
    ]


def test_full_preset_covers_every_head_dim_mask_and_power_of_two_length():
    spec = grid.make_spec("full")
    cells = grid.build_grid(spec)
    assert len(cells) == 3 * 2 * 6
    assert spec.seqlens == (512, 1024, 2048, 4096, 8192, 16384)
    assert spec.modes == ("fwd", "bwd", "fwdbwd")
    assert {c.head_dim for c in cells} == {64, 128, 256}


def test_shapes_hold_tokens_and_width_fixed():
    cells = grid.build_grid(grid.make_spec("full"))
    for c in cells:
        assert c.batch * c.seqlen == 16384
        assert c.heads * c.head_dim == 2048
    c = next(c for c in cells if c.head_dim == 64 and c.seqlen == 512)
    assert (c.batch, c.heads) == (32, 32)
    c = next(c for c in cells if c.head_dim == 256 and c.seqlen == 16384)
    assert (c.batch, c.heads) == (1, 8)


def test_long_sequence_keeps_batch_one():
    (c,) = grid.build_grid(grid.make_spec("quick", head_dims=(64,), causal=(True,), seqlens=(32768,)))
    assert (c.batch, c.seqlen, c.heads) == (1, 32768, 32)


def test_filters_replace_preset_axes_and_keep_order():
    spec = grid.make_spec("quick", head_dims=(256, 64, 64), causal=(True,), seqlens=(8192, 2048),
                          modes=("fwdbwd", "fwd"), dtype="fp16")
    cells = grid.build_grid(spec)
    assert spec.modes == ("fwd", "fwdbwd")
    assert [(c.head_dim, c.seqlen) for c in cells] == [(64, 2048), (64, 8192), (256, 2048), (256, 8192)]
    assert all(c.causal and c.dtype == "fp16" for c in cells)


@pytest.mark.parametrize("kwargs, word", [
    (dict(head_dims=(96,)), "does not divide"),
    (dict(head_dims=(60,)), "multiple of 8"),
    (dict(seqlens=(0,)), "seqlen"),
    (dict(modes=("sideways",)), "mode"),
    (dict(dtype="fp8"), "dtype"),
])
def test_bad_axis_values_are_named(kwargs, word):
    with pytest.raises(ValueError, match=word):
        grid.make_spec("quick", **kwargs)


def test_unknown_preset():
    with pytest.raises(ValueError, match="preset"):
        grid.make_spec("medium")


def test_value_parsers():
    assert grid.parse_seqlen("4k") == 4096 and grid.parse_seqlen("16K") == 16384
    assert grid.parse_seqlen("1000") == 1000
    with pytest.raises(ValueError, match="seqlen"):
        grid.parse_seqlen("many")
    assert grid.parse_causal("causal") == (True,)
    assert grid.parse_causal("0") == (False,)
    assert grid.parse_causal("both") == (False, True)
    with pytest.raises(ValueError, match="causal"):
        grid.parse_causal("sometimes")
    assert grid.parse_mode("fwd+bwd") == ("fwdbwd",)
    assert grid.parse_mode("all") == grid.MODES


# ---- FLOPs --------------------------------------------------------------------------------------

def test_flops_forward_by_hand():
    # 4 * B * H * S * S * d with B=1, H=16, S=16384, d=128.
    assert attention_flops(1, 16, 16384, 16384, 128, False, "fwd") == 2_199_023_255_552
    assert attention_flops(1, 16, 16384, 16384, 128, True, "fwd") == 1_099_511_627_776
    # Sq != Sk: 4 * 2 * 3 * 100 * 300 * 64
    assert attention_flops(2, 3, 100, 300, 64, False, "fwd") == 46_080_000


def test_flops_backward_and_both():
    fwd = attention_flops(4, 8, 1024, 1024, 64, True, "fwd")
    assert fwd == 4 * 4 * 8 * 1024 * 1024 * 64 / 2
    assert attention_flops(4, 8, 1024, 1024, 64, True, "bwd") == 2.5 * fwd
    assert attention_flops(4, 8, 1024, 1024, 64, True, "fwdbwd") == 3.5 * fwd
    with pytest.raises(ValueError, match="mode"):
        attention_flops(1, 1, 1, 1, 1, False, "both")


def test_cell_flops_is_the_same_for_every_length_at_fixed_tokens():
    # B = tokens / S, so FLOPs grow linearly with S: 16k tokens, width 2048 -> 4*16384*S*2048.
    for c in grid.build_grid(grid.make_spec("full", causal=(False,))):
        assert cell_flops(c, "fwd") == 4 * 16384 * c.seqlen * 2048


def test_tflops_conversion():
    assert tflops(2e12, 4.0) == pytest.approx(500.0)
    with pytest.raises(ValueError):
        tflops(1.0, 0.0)


# ---- reference and FA3 rule -------------------------------------------------------------------------

def _loop_attention(q, k, v, scale, causal, offset):
    """Row-by-row float64 attention: an independent formulation of the reference."""
    out = torch.zeros(q.shape[0], v.shape[1], dtype=torch.float64)
    for i in range(q.shape[0]):
        n = k.shape[0] if not causal else max(0, min(k.shape[0], i + offset + 1))
        if n == 0:
            continue
        s = (k[:n].double() @ q[i].double()) * scale
        p = torch.exp(s - s.max())
        out[i] = (p / p.sum()) @ v[:n].double()
    return out


@pytest.mark.parametrize("causal, sq, sk", [(False, 7, 9), (True, 7, 9), (True, 9, 5)])
def test_attention_math_matches_loop(causal, sq, sk):
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(n, 16, generator=g, dtype=torch.float64) for n in (sq, sk, sk))
    got = attention_math(q, k, v, 0.3, causal, sk - sq)
    torch.testing.assert_close(got, _loop_attention(q, k, v, 0.3, causal, sk - sq))
    if sq > sk:
        assert torch.all(got[: sq - sk] == 0)


def test_attention_math_gradients_have_no_nan_for_empty_rows():
    q, k, v = (torch.randn(n, 8, dtype=torch.float64, requires_grad=True) for n in (6, 3, 3))
    out = attention_math(q, k, v, 0.5, True, -3)  # rows 0..2 see no key
    (out.sum()).backward()
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v))


def test_fa3_verdict_pass_fail_and_nan():
    ref = torch.linspace(-1, 1, 50)
    pt = ref + 0.01
    assert fa3_verdict("out", ref + 0.015, ref, pt).ok
    bad = fa3_verdict("out", ref + 0.05, ref, pt)
    assert not bad.ok and "out err" in bad.describe() and ">" in bad.describe()
    nan = ref.clone()
    nan[3] = float("nan")
    v = fa3_verdict("out", nan, ref, pt)
    assert not v.ok and "NaN" in v.describe()


def _bshd_math(q, k, v, scale, causal):
    return attention_math(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), scale, causal,
                          k.shape[1] - q.shape[1]).transpose(1, 2)


def test_check_against_passes_input_dtype_math_and_catches_one_wrong_head():
    q, k, v, dout = random_inputs(2, 40, 40, 3, 16, torch.bfloat16, "cpu", torch.Generator().manual_seed(2))
    heads = sample_heads(2, 3)
    assert heads == [(0, 0), (1, 2)]
    refs = [head_reference(q, k, v, dout, b, h, 0.25, True, 0, True) for b, h in heads]
    from fa3lite.bench.reference import run_with_grads

    out, grads = run_with_grads(lambda a, b, c: _bshd_math(a, b, c, 0.25, True), q, k, v, dout, True)
    assert all(x.ok for x in check_against(refs, out, grads))
    broken = out.clone()
    broken[1, :, 2, :] += 0.1  # the second sampled head only
    verdicts = {x.what: x for x in check_against(refs, broken, grads)}
    assert not verdicts["out"].ok and verdicts["dq"].ok
    nan_elsewhere = out.clone()
    nan_elsewhere[0, 5, 1, 3] = float("nan")  # a head that is not sampled
    assert not {x.what: x for x in check_against(refs, nan_elsewhere, None)}["out"].ok


# ---- timing helpers --------------------------------------------------------------------------------

def test_rotation_sets():
    mb = 2**20
    assert rotation_sets(192 * mb, 50 * mb) == MIN_SETS  # one 16k-token set is already 4x L2
    assert rotation_sets(10 * mb, 50 * mb) == min(20, MAX_SETS)  # ceil(200 / 10), capped
    assert rotation_sets(30 * mb, 50 * mb) == 7  # ceil(200 / 30)
    assert rotation_sets(1, 50 * mb) == MAX_SETS
    with pytest.raises(ValueError):
        rotation_sets(0, 50 * mb)


def test_stats_median_and_quantiles():
    s = Stats.of([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (s.median, s.p20, s.p80, s.reps) == (3.0, 1.8, 4.2, 5)
    with pytest.raises(ValueError):
        Stats.of([])


# ---- runner with fake implementations and a fake timer ---------------------------------------------------

class MathImpl(Impl):
    """attention_math in the input dtype: passes FA3's rule by construction."""

    def __init__(self, name, scale_error=1.0, bind_error=None, call_error=None, wrong_at=None):
        self.name = self.label = name
        self.scale_error, self.bind_error, self.call_error, self.wrong_at = (
            scale_error, bind_error, call_error, wrong_at)
        self.calls = 0

    def probe(self):
        return None

    def bind(self, causal, seqlen_q, seqlen_k, scale, device):
        if self.bind_error:
            raise self.bind_error
        wrong = self.wrong_at is not None and seqlen_q == self.wrong_at

        def call(q, k, v):
            self.calls += 1
            if self.call_error:
                raise self.call_error
            return _bshd_math(q, k, v, scale * (1.2 if wrong else self.scale_error), causal)

        return Bound(call)


class FakeTimer:
    """Runs each step once per input set (so the steps are exercised) and returns fixed times."""

    def __init__(self, ms=2.0):
        self.ms, self.steps = ms, 0

    def time(self, step, n_sets, context):
        with context():
            for i in range(n_sets):
                step(i)
                self.steps += 1
        return [self.ms * 0.9, self.ms, self.ms * 1.1]

    def host_time(self, call, context):
        with context():
            call()
        return 12.5, 20.0

    def host_times(self, steps):
        return [self.host_time(call, context) for call, context in steps]


def _tiny_spec(**kw):
    return grid.make_spec("quick", head_dims=(16,), seqlens=(32, 64), tokens=128, width=32, **kw)


def _run(impls, spec=None, **kw):
    spec = spec or _tiny_spec()
    runner = GridRunner(impls, spec, kw.pop("timer", FakeTimer()), "cpu", l2_bytes=4096, **kw)
    return runner, runner.run(grid.build_grid(spec))


def _statuses(ms, impl):
    return {(m.cell.causal, m.cell.seqlen, m.mode): m.status for m in ms if m.impl == impl}


def test_runner_checks_then_times_every_cell_and_mode():
    good = MathImpl("fa3lite")
    timer = FakeTimer(ms=2.0)
    runner, ms = _run([good, MathImpl(BASELINE)], timer=timer)
    assert len(ms) == 2 * 2 * 2 * 3  # impls x masks x lengths x modes
    assert all(m.status == OK for m in ms)
    m = next(m for m in ms if m.impl == "fa3lite" and m.mode == "bwd" and m.cell.seqlen == 64)
    assert m.stats.median == 2.0 and m.tflops == pytest.approx(cell_flops(m.cell, "bwd") / 2e-3 / 1e12)
    # Per cell: forward check, backward check, then 2 input sets x (fwd steps, bwd's forwards,
    # fwdbwd steps); plus fa3lite's odd-length check (forward, backward) per mask. Backward steps
    # call autograd only.
    assert good.calls == 4 * (2 + 3 * 2) + 2 * 2
    assert timer.steps == 2 * 4 * 3 * 2  # impls x cells x modes x sets
    impl_checks = [c for c in runner.checks if c.impl != "numba-oracle"]
    assert {c.status for c in impl_checks} == {OK}
    assert {c.seqlen for c in impl_checks} == {32, 64, ODD_SEQLEN}


class DriftTimer(FakeTimer):
    """Each timing call returns one time, one more than the call before: a clock that drifts."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def time(self, step, n_sets, context):
        super().time(step, n_sets, context)
        self.calls += 1
        return [float(self.calls)]


def test_rounds_rotate_the_implementations():
    """Round r starts the implementations r places later (round 1's order: peers first), each one's
    jobs kept together in their order."""
    from fa3lite.bench.runner import _rotated

    jobs = [(MathImpl(name), mode, None) for name in ("a", "b", "c") for mode in ("fwd", "bwd")]
    names = lambda r: [jobs[n][0].name + jobs[n][1] for n in _rotated(jobs, r)]  # noqa: E731
    assert names(1) == ["cfwd", "cbwd", "afwd", "abwd", "bfwd", "bbwd"]
    assert names(2) == ["bfwd", "bbwd", "cfwd", "cbwd", "afwd", "abwd"]
    assert names(3) == ["afwd", "abwd", "bfwd", "bbwd", "cfwd", "cbwd"]
    assert _rotated([], 1) == []


def test_runner_times_each_cell_in_interleaved_rounds():
    timer = DriftTimer()
    spec = _tiny_spec()
    _, ms = _run([MathImpl(BASELINE), MathImpl("fa3lite")], spec=spec, timer=timer, rounds=3)
    jobs = 2 * len(spec.modes)   # per cell: every (implementation, mode)
    assert timer.calls == 3 * jobs * 4   # rounds x jobs x cells
    by_cell = {}
    for m in ms:
        assert m.status == OK and m.stats.reps == 3
        by_cell.setdefault((m.cell.causal, m.cell.seqlen), []).append(m)
    for cell_ms in by_cell.values():
        # rounds time the baseline's k modes first, then fa3lite's first (rotated one place), then the
        # baseline's first again: baseline mode j at calls j, 3k + j, 4k + j (median 3k + j), fa3lite's
        # at k + j, 2k + j, 5k + j (median 2k + j), with calls counted from the cell's first
        k = len(spec.modes)
        first = min(m.stats.median for m in cell_ms) - 2 * k
        got = {(m.impl, m.stats.median - first) for m in cell_ms}
        assert got == {(BASELINE, 3 * k + j) for j in range(k)} | {("fa3lite", 2 * k + j) for j in range(k)}
    with pytest.raises(ValueError, match="rounds"):
        GridRunner([MathImpl(BASELINE)], spec, timer, "cpu", l2_bytes=4096, rounds=0)


def test_a_job_refused_while_timed_sits_out_the_later_rounds():
    """A timing that raises (an OOM under the timer) is that job's row; the further rounds time the
    other jobs and skip it instead of failing the run."""
    class OomOnce(FakeTimer):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def time(self, step, n_sets, context):
            self.calls += 1
            if self.calls == 1:
                raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
            return super().time(step, n_sets, context)

    timer = OomOnce()
    spec = grid.make_spec("quick", head_dims=(16,), causal=(False,), seqlens=(64,), modes=("fwd", "bwd"),
                          tokens=128, width=32)
    _, ms = _run([MathImpl(BASELINE), MathImpl("fa3lite")], spec=spec, timer=timer, rounds=3)
    by = {(m.impl, m.mode): m for m in ms}
    assert by[(BASELINE, "fwd")].status == OOM and "out of memory" in by[(BASELINE, "fwd")].reason
    assert all(by[k].status == OK and by[k].stats.reps == 9 for k in by if k != (BASELINE, "fwd"))
    assert timer.calls == 1 + 3 * 3   # the refused timing, then three rounds of the other three jobs


def test_runner_reports_wrong_unsupported_oom_and_absent_without_timing_them():
    impls = [
        MathImpl(BASELINE),
        MathImpl("wrong", scale_error=1.3),
        MathImpl("refuses", bind_error=RuntimeError("No available kernel.\n  b\n\n c\n d")),
        MathImpl("oom", call_error=torch.cuda.OutOfMemoryError("CUDA out of memory. Tried 9 GiB")),
        MathImpl("gone"),
    ]
    timer = FakeTimer()
    runner, ms = _run(impls, timer=timer, absent={"gone": "flash-attn-4 not installed"})
    assert set(_statuses(ms, "wrong").values()) == {WRONG}
    assert set(_statuses(ms, "refuses").values()) == {UNSUPPORTED}
    assert set(_statuses(ms, "oom").values()) == {OOM}
    assert set(_statuses(ms, "gone").values()) == {ABSENT}
    refused = next(m for m in ms if m.impl == "refuses")
    assert refused.reason == "RuntimeError: No available kernel. b c"  # first lines, joined
    assert next(m for m in ms if m.impl == "gone").reason == "flash-attn-4 not installed"
    assert all(m.stats is None for m in ms if m.impl != BASELINE)
    assert impls[4].calls == 0


def test_runner_output_of_wrong_shape_is_wrong_not_a_crash():
    class Transposed(MathImpl):
        def bind(self, *args):
            inner = super().bind(*args)
            return Bound(lambda q, k, v: inner.call(q, k, v).transpose(1, 2))

    spec = _tiny_spec(modes=("fwd",))  # (a backward would already refuse the mismatched dout)
    _, ms = _run([Transposed("fa3lite"), MathImpl(BASELINE)], spec=spec, odd_check=False)
    assert set(_statuses(ms, "fa3lite").values()) == {WRONG}
    assert all("not comparable" in m.reason for m in ms if m.impl == "fa3lite")
    assert set(_statuses(ms, BASELINE).values()) == {OK}


def test_runner_marks_wrong_at_odd_length_only_when_checked():
    impl = MathImpl("fa3lite", wrong_at=ODD_SEQLEN)
    runner, ms = _run([impl])
    assert set(_statuses(ms, "fa3lite").values()) == {WRONG}
    assert all(f"S={ODD_SEQLEN}" in m.reason for m in ms)
    _, ms = _run([MathImpl("fa3lite", wrong_at=ODD_SEQLEN)], odd_check=False)
    assert set(_statuses(ms, "fa3lite").values()) == {OK}


def test_odd_length_check_is_for_fa3lite_only():
    _, ms = _run([MathImpl("fa3lite"), MathImpl(BASELINE, wrong_at=ODD_SEQLEN)])
    assert {m.status for m in ms} == {OK}


class BackwardImpl(MathImpl):
    """Forward right; backward raising or with a wrong dq."""

    def __init__(self, name, mode):
        super().__init__(name)
        self.mode = mode

    def bind(self, *args):
        inner = super().bind(*args)
        mode = self.mode

        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, q, k, v):
                with torch.enable_grad():
                    leaves = [t.detach().requires_grad_(True) for t in (q, k, v)]
                    out = inner.call(*leaves)
                ctx.saved = (leaves, out)
                return out.detach()

            @staticmethod
            def backward(ctx, dout):
                if mode == "raise":
                    raise NotImplementedError("no backward kernel yet")
                leaves, out = ctx.saved
                dq, dk, dv = torch.autograd.grad(out, leaves, dout, retain_graph=True)
                return dq * 1.5, dk, dv

        return Bound(Fn.apply)


@pytest.mark.parametrize("mode, bwd_status", [("raise", UNSUPPORTED), ("wrong", WRONG)])
def test_forward_is_timed_when_only_the_backward_fails(mode, bwd_status):
    runner, ms = _run([BackwardImpl("fa3lite", mode)])
    by_mode = {}
    for m in ms:
        by_mode.setdefault(m.mode, set()).add(m.status)
    assert by_mode == {"fwd": {OK}, "bwd": {bwd_status}, "fwdbwd": {bwd_status}}
    reasons = {m.reason for m in ms if m.mode == "bwd"}
    assert all(("no backward kernel yet" in r) if mode == "raise" else ("dq err" in r) for r in reasons)


def test_runner_wrong_at_one_grid_length_is_wrong_there_only():
    _, ms = _run([MathImpl("fa3lite", wrong_at=64)])
    st = _statuses(ms, "fa3lite")
    assert {v for (c, s, m), v in st.items() if s == 64} == {WRONG}
    assert {v for (c, s, m), v in st.items() if s == 32} == {OK}


def test_runner_time_budget_skips_remaining_work():
    now = [0.0]

    class SlowTimer(FakeTimer):
        def time(self, step, n_sets, context):
            now[0] += 10.0
            return super().time(step, n_sets, context)

    _, ms = _run([MathImpl("fa3lite")], timer=SlowTimer(), deadline=25.0, clock=lambda: now[0])
    statuses = [m.status for m in ms]
    assert statuses[:3] == [OK, OK, OK]
    assert SKIPPED in statuses
    assert all(m.reason == TIME_BUDGET_REASON for m in ms if m.status == SKIPPED)
    assert len(ms) == 2 * 2 * 3


def test_runner_cuda_fault_is_wrong_and_stops_everything_after_it():
    fault = RuntimeError("CUDA error: an illegal memory access was encountered\nCUDA kernel errors ...")
    faulty = MathImpl("fa3lite", call_error=fault)
    peer = MathImpl(BASELINE)
    runner, ms = _run([faulty, peer], odd_check=False)
    first = grid.build_grid(_tiny_spec())[0]
    in_first = [m for m in ms if m.cell == first]
    assert {m.impl: m.status for m in in_first} == {"fa3lite": WRONG, BASELINE: OK}  # peer ran first
    assert all("CUDA fault" in m.reason for m in in_first if m.impl == "fa3lite")
    later = [m for m in ms if m.cell != first]
    assert later and {m.status for m in later} == {SKIPPED}
    assert all("CUDA context lost after fa3lite" in m.reason for m in later)
    assert [m.impl for m in in_first[:3]] == ["fa3lite"] * 3  # table order restored
    assert {h.status for h in runner.host_times()} == {SKIPPED}


def test_runner_streams_results_and_host_times():
    seen = []
    impls = [MathImpl("fa3lite"), MathImpl(BASELINE, scale_error=1.5), MathImpl("gone")]
    runner, ms = _run(impls, spec=_tiny_spec(modes=("fwd",)), on_result=seen.append,
                      absent={"gone": "not installed"})
    assert len(seen) == len(ms) and set(seen) == set(ms)
    hosts = {h.impl: h for h in runner.host_times()}
    assert hosts["fa3lite"].status == OK and hosts["fa3lite"].host_us == 12.5
    assert hosts[BASELINE].status == WRONG and "err" in hosts[BASELINE].reason
    assert hosts["gone"].status == ABSENT


def test_torch_layout_entries_are_host_timed_on_views_made_once():
    """An entry in torch's (B, H, S, d) layout (Bound.torch_layout) is checked through the adapter but
    host-timed on (B, H, S, d) views of the inputs made once per mode: the table charges it what a caller
    in that layout pays, not the adapter's per-call views. Its gradients still flow (fwd_bwd)."""
    seen = []

    class TorchLayout(MathImpl):
        def bind(self, causal, seqlen_q, seqlen_k, scale, device):
            def native(q, k, v):
                seen.append((torch.is_grad_enabled(), q, k, v))
                return _bshd_math(*(t.transpose(1, 2) for t in (q, k, v)), scale, causal).transpose(1, 2)

            return Bound(lambda q, k, v: native(*(t.transpose(1, 2) for t in (q, k, v))).transpose(1, 2),
                         torch_layout=native)

    class Twice(FakeTimer):
        def host_time(self, call, context):
            with context():
                call()
                call()
            return 12.5, 20.0

    impls = [MathImpl("fa3lite"), TorchLayout(BASELINE)]
    runner, _ = _run(impls, spec=_tiny_spec(modes=("fwd",)), timer=Twice())
    seen.clear()
    hosts = [h for h in runner.host_times() if h.impl == BASELINE]
    assert {h.mode: h.status for h in hosts} == {"fwd": OK, "fwd_grad": OK, "fwd_bwd": OK}
    # the check's one call through the adapter, then per mode a first call and two timed ones
    timed = seen[1:]
    assert len(timed) == 3 * 3
    by_q = {}
    for grad, q, k, v in timed:
        by_q.setdefault(id(q), []).append((grad, q, k, v))
    assert len(by_q) == 3                                   # one set of views per mode, made once
    for calls in by_q.values():
        grad, q, k, v = calls[0]
        assert len(calls) == 3 and all(c[2] is k and c[3] is v and c[0] == grad for c in calls)
        shape = (HOST_SHAPE["batch"], HOST_SHAPE["heads"], HOST_SHAPE["seqlen"], HOST_SHAPE["head_dim"])
        assert q.shape == shape and q.transpose(1, 2).is_contiguous() and q.requires_grad == grad
    assert sorted(c[0][0] for c in by_q.values()) == [False, True, True]   # fwd, fwd_grad, fwd_bwd


def test_sdpa_adapters_give_their_torch_layout_call():
    from fa3lite.bench.impls import Sdpa

    bound = Sdpa("math", "Math", "MATH").bind(True, 32, 32, 0.25, "cpu")
    q, k, v = (torch.randn(2, 32, 3, 16) for _ in range(3))
    assert bound.torch_layout is not None
    with bound.context():
        want = bound.call(q, k, v)
        got = bound.torch_layout(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
    assert got.shape == (2, 3, 32, 16) and torch.equal(got.transpose(1, 2), want)


def test_runner_times_every_mode_in_grad_mode():
    class CountingTimer(FakeTimer):
        def __init__(self):
            super().__init__()
            self.grad_calls = 0

        def time(self, step, n_sets, context):
            before = torch.is_grad_enabled()
            with context():
                grad_mode = torch.is_grad_enabled()
            assert before  # contexts are entered by the timer, not leaked
            self.grad_calls += grad_mode
            return super().time(step, n_sets, context)

    timer = CountingTimer()
    _run([MathImpl("fa3lite")], spec=_tiny_spec(modes=("fwd", "bwd", "fwdbwd")), timer=timer)
    # every mode runs as in training (grad mode on): 3 modes x 4 cells
    assert timer.grad_calls == 3 * 4


# ---- impl registry -------------------------------------------------------------------------------------

def test_impl_registry_order_and_selection():
    names = [i.name for i in all_impls()]
    assert names[:3] == ["fa3lite", "fa3lite_det", BASELINE]
    assert set(names) == {"fa3lite", "fa3lite_det", "cudnn", "fa4", "fa3", "fa2", "mem_eff", "flex"}
    assert [i.name for i in select_impls(None)] == [n for n in names if n != "fa3lite_det"]
    assert [i.name for i in select_impls(("flex", "fa3lite"))] == ["fa3lite", "flex"]
    with pytest.raises(ValueError, match="nonesuch"):
        select_impls(("nonesuch",))


def test_deterministic_adapter_asks_fa3lite_for_the_deterministic_backward(monkeypatch):
    import fa3lite

    calls = []
    monkeypatch.setattr(fa3lite, "flash_attn_func", lambda q, k, v, **kw: calls.append(kw) or q)
    by_name = {i.name: i for i in select_impls(("fa3lite", "fa3lite_det"))}
    for name in ("fa3lite", "fa3lite_det"):
        by_name[name].bind(True, 8, 8, 0.5, "cpu").call(None, None, None)
    assert calls == [dict(softmax_scale=0.5, causal=True, deterministic=flag, backend="fa3lite")
                     for flag in (False, True)]
    assert (by_name["fa3lite"].label, by_name["fa3lite_det"].label) == ("fa3lite", "fa3lite det")


def test_deterministic_rows_carry_the_flag_in_results_json(monkeypatch, tmp_path):
    """The real fa3lite adapters over a CPU stand-in for flash_attn_func: each row of fa3lite_det
    says deterministic true, each of fa3lite false, the baseline's has no such key; the table has a
    column for it; the host-time table leaves it out; partial results keep the flag."""
    import fa3lite
    from fa3lite.bench.results import measurement_row

    def stand_in(q, k, v, softmax_scale, causal, deterministic, backend):
        return _bshd_math(q, k, v, softmax_scale, causal)

    monkeypatch.setattr(fa3lite, "flash_attn_func", stand_in)
    impls = select_impls(("fa3lite", "fa3lite_det")) + [MathImpl(BASELINE)]
    runner, ms = _run(impls, spec=_tiny_spec(modes=("fwd", "bwd")))
    assert {m.status for m in ms} == {OK}
    run = BenchRun(meta={}, config={}, measurements=ms)
    path = tmp_path / "results.json"
    report.write_json(path, run)
    flags = {}
    for row in json.loads(path.read_text())["results"]:
        flags.setdefault(row["impl"], set()).add(row.get("deterministic", "no key"))
    assert flags == {"fa3lite": {False}, "fa3lite_det": {True}, BASELINE: {"no key"}}
    labels = {i.name: i.label for i in impls}
    header = report.format_table(run, labels).splitlines()[0]
    assert header.split("|")[1].split() == ["fa3lite", "fa3lite", "det", BASELINE]
    assert {h.impl for h in runner.host_times()} == {"fa3lite", BASELINE}
    partial = tmp_path / cli.PARTIAL_NAME
    partial.write_text("".join(json.dumps(measurement_row(m)) + "\n" for m in ms))
    assert cli._read_partial(partial, grid.build_grid(_tiny_spec())) == ms


def test_missing_peer_probe_names_the_package():
    fa4 = next(i for i in all_impls() if i.name == "fa4")
    reason = fa4.probe()
    try:
        import flash_attn.cute  # noqa: F401
        assert reason is None
    except ImportError:
        assert reason and "flash-attn-4" in reason


# ---- reports ----------------------------------------------------------------------------------------------

def _fake_run():
    cells = grid.build_grid(grid.make_spec("quick", causal=(False,), seqlens=(1024, 4096)))
    ms = []
    for c in cells:
        for mode in ("fwd", "bwd"):
            ms.append(Measurement(BASELINE, c, mode, OK, Stats(2.0, 1.9, 2.1, 30)))
            ms.append(Measurement("fa3lite", c, mode, OK, Stats(1.0, 0.9, 1.1, 30)))
            ms.append(Measurement("flex", c, mode, UNSUPPORTED, reason="RuntimeError: nope"))
            ms.append(Measurement("fa4", c, mode, ABSENT, reason="flash-attn-4 not installed"))
    meta = {"device": "NVIDIA H100 80GB HBM3", "driver": "580.159.04", "torch": "2.11.0", "cuda": "13.0",
            "cudnn": 91900, "fa3lite_commit": "abc123", "fa3lite_source_hash": "feed", "capability": "9.0"}
    return BenchRun(
        meta=meta, config={"dtype": "bf16", "tokens": 16384, "width": 2048, "reps": 30},
        absent={"fa4": "flash-attn-4 not installed"}, measurements=ms,
        checks=[CheckRecord("flex", 128, False, 1024, UNSUPPORTED, "RuntimeError: nope")],
        host_times=[HostTime("fa3lite", OK, 40.0, 45.0), HostTime("fa4", ABSENT, reason="absent")],
        compile_times=[CompileTime(128, False, "bf16", "fwd", OK, 3.5, 0.2, 0.05)],
        elapsed_s=12.0,
    )


LABELS = {"fa3lite": "fa3lite", "cudnn": "cuDNN", "fa4": "FA4", "flex": "Flex"}


def test_table_shows_tflops_ratio_and_status_words():
    run = _fake_run()
    text = report.format_report(run, LABELS, "B=1, S=128, H=16, d=128")
    m = next(m for m in run.measurements if m.impl == "fa3lite" and m.cell.seqlen == 1024 and m.mode == "fwd")
    assert f"{m.tflops:.0f} 2.00x" in text
    base = next(m for m in run.measurements if m.impl == BASELINE and m.cell.seqlen == 1024 and m.mode == "fwd")
    assert f"{base.tflops:.0f} 1.00x" in text
    assert "unsup" in text and "absent" in text
    assert "Flex unsup [bwd/fwd] at d=128 full S=1024, d=128 full S=4096: RuntimeError: nope" in text
    assert "FA4 absent: flash-attn-4 not installed" in text
    assert "NVIDIA H100 80GB HBM3" in text and "580.159.04" in text and "abc123" in text
    assert "3.500" in text and "40.0" in text
    table_lines = report.format_table(run, LABELS).splitlines()
    assert table_lines[0].split("|")[1].split() == ["fa3lite", "cuDNN", "FA4", "Flex"]
    assert len({len(line) for line in table_lines if line and "|" in line}) == 1  # aligned columns


def test_csv_rows_carry_ratio_and_environment(tmp_path):
    run = _fake_run()
    path = tmp_path / "r.csv"
    report.write_csv(path, run)
    with open(path) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(run.measurements)
    assert tuple(rows[0].keys()) == report.CSV_COLUMNS
    fa = next(r for r in rows if r["impl"] == "fa3lite" and r["mode"] == "bwd" and r["seqlen"] == "4096")
    assert float(fa["ratio_cudnn"]) == pytest.approx(2.0)
    assert float(fa["gflop"]) == pytest.approx(4 * 16384 * 4096 * 2048 * 2.5 / 1e9)
    assert fa["device"] == "NVIDIA H100 80GB HBM3" and fa["fa3lite_commit"] == "abc123"
    flex = next(r for r in rows if r["impl"] == "flex")
    assert flex["status"] == UNSUPPORTED and flex["tflops"] == "" and flex["reason"] == "RuntimeError: nope"


def test_json_holds_everything(tmp_path):
    run = _fake_run()
    path = tmp_path / "r.json"
    report.write_json(path, run)
    data = json.loads(path.read_text())
    assert data["meta"]["driver"] == "580.159.04"
    assert data["absent"] == {"fa4": "flash-attn-4 not installed"}
    assert len(data["results"]) == len(run.measurements)
    assert data["compile_time"][0]["cold_s"] == 3.5
    assert data["host_time"][0]["host_us"] == 40.0
    assert data["checks"][0]["status"] == UNSUPPORTED
    ok = [r for r in data["results"] if r["status"] == OK]
    assert all(r["tflops"] > 0 and r["ms_median"] > 0 for r in ok)


def test_plots_written_when_matplotlib_is_there(tmp_path):
    pytest.importorskip("matplotlib")
    from fa3lite.bench.plots import write_plots

    paths = write_plots(_fake_run(), tmp_path, LABELS)
    assert sorted(p.name for p in paths) == ["plot_bwd.png", "plot_fwd.png"]
    for p in paths:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000


def test_partial_results_round_trip(tmp_path):
    from fa3lite.bench.results import measurement_row

    run = _fake_run()
    path = tmp_path / cli.PARTIAL_NAME
    path.write_text("".join(json.dumps(measurement_row(m)) + "\n" for m in run.measurements) + "{broken\n")
    cells = list(dict.fromkeys(m.cell for m in run.measurements))
    assert cli._read_partial(path, cells) == run.measurements


# ---- compile-time merging --------------------------------------------------------------------------------

def test_compile_time_merges_cold_and_disk_runs():
    calls = []

    def fake_probe(variants, dtype, cache_dir, timeout_s):
        calls.append((cache_dir, list(variants)))
        first = len(calls) == 1
        recs = {
            (128, False): {"head_dim": 128, "causal": False, "fwd_first_s": 4.0 if first else 0.3,
                           "fwd_warm_ms": 0.05, "bwd_first_s": 6.0 if first else 0.4, "bwd_warm_ms": 0.1},
            (128, True): {"head_dim": 128, "causal": True, "fwd_first_s": 3.0, "fwd_warm_ms": 0.04,
                          "bwd_error": "RuntimeError: no kernel"},
            (256, False): {"head_dim": 256, "causal": False, "fwd_error": "InputError: head dim"},
        }
        recs[compile_time.SETUP_KEY] = {"setup_s": 2.5 if first else 1.5}
        return recs, "" if first else "probe timed out after 5 s"

    out, notes = compile_time.measure([(128, False), (128, True), (64, False), (256, False)], "bf16",
                                      "/tmp/x", 5, runner=fake_probe)
    assert len(notes) == 1 and "2.50 s" in notes[0] and "1.50 s" in notes[0]
    assert calls == [("/tmp/x", [(128, False), (128, True), (64, False), (256, False)]),
                     ("/tmp/x", [(128, False), (128, True)])]  # only what the cold child cached
    by = {(c.head_dim, c.causal, c.kind): c for c in out}
    assert by[(128, False, "fwd")].cold_s == 4.0 and by[(128, False, "fwd")].disk_cached_s == 0.3
    assert by[(128, False, "bwd")].warm_ms == 0.1
    assert by[(128, True, "fwd")].status == OK and by[(128, True, "fwd")].disk_cached_s == 3.0
    assert by[(128, True, "bwd")].status == UNSUPPORTED and "no kernel" in by[(128, True, "bwd")].reason
    assert by[(256, False, "bwd")].status == UNSUPPORTED and "head dim" in by[(256, False, "bwd")].reason
    assert by[(64, False, "bwd")].status == SKIPPED and by[(64, False, "bwd")].reason == "no record from the probe"
    assert by[(128, False, "fwd")].reason == "" and len(out) == 8
    assert compile_time.variants_of(grid.build_grid(grid.make_spec("quick"))) == [(128, False), (128, True)]


def test_compile_probe_failure_is_reported_not_raised(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("the probe would run for real on this machine")
    records, error = compile_time._run_probe([(128, False)], "bf16", str(tmp_path), 60)
    assert records == {} and error.startswith("probe exited 1")


# ---- arguments ---------------------------------------------------------------------------------------------

def test_parse_args_soak():
    assert cli.parse_args([]).soak_ms == cli.DEFAULT_SOAK_MS > 0
    assert cli.parse_args(["--soak-ms", "0"]).soak_ms == 0
    with pytest.raises(SystemExit):
        cli.parse_args(["--soak-ms", "-5"])


def test_parse_args_defaults():
    o = cli.parse_args([])
    assert o.preset == "default" and o.spec.dtype == "bf16" and o.out == Path("bench_out")
    assert o.spec.head_dims == (64, 128, 256) and o.spec.seqlens == (1024, 4096, 16384)
    assert o.reps >= cli.MIN_REPS and o.host_time and o.compile_time and o.plots and o.impls is None


def test_parse_args_filters_and_flags(tmp_path):
    o = cli.parse_args(["--full", "--head-dim", "64,128", "--head-dim", "256", "--causal",
                        "--seqlen", "1k,2k", "--mode", "fwd", "--mode", "fwd+bwd", "--dtype", "fp16",
                        "--impl", "fa3lite,cudnn", "--out", str(tmp_path), "--reps", "25",
                        "--time-budget", "400", "--no-plots", "--no-compile-time", "--no-host-time"])
    s = o.spec
    assert (s.head_dims, s.causal, s.seqlens, s.modes, s.dtype) == (
        (64, 128, 256), (True,), (1024, 2048), ("fwd", "fwdbwd"), "fp16")
    assert o.impls == ("fa3lite", "cudnn") and o.out == tmp_path and o.reps == 25
    assert o.time_budget == 400 and not (o.plots or o.compile_time or o.host_time)
    assert cli.parse_args(["--quick", "--causal", "false"]).spec.causal == (False,)
    assert cli.parse_args(["--causal", "both"]).spec.causal == (False, True)


def test_deterministic_flag_adds_fa3lite_det_next_to_fa3lite():
    default = [i.name for i in select_impls(cli.parse_args([]).impls)]
    both = [i.name for i in select_impls(cli.parse_args(["--deterministic"]).impls)]
    assert "fa3lite_det" not in default
    assert both == default[:1] + ["fa3lite_det"] + default[1:]
    assert cli.parse_args(["--impl", "fa3lite_det"]).impls == ("fa3lite_det",)
    o = cli.parse_args(["--impl", "fa3lite,cudnn", "--deterministic"])
    assert [i.name for i in select_impls(o.impls)] == ["fa3lite", "fa3lite_det", BASELINE]


@pytest.mark.parametrize("argv", [
    ["--quick", "--full"], ["--head-dim", "abc"], ["--seqlen", "x"], ["--mode", "sideways"],
    ["--causal", "maybe"], ["--dtype", "fp8"], ["--impl", "nonesuch"], ["--reps", "3"],
    ["--head-dim", "96"], ["--time-budget", "0"],
])
def test_parse_args_rejects(argv, capsys):
    with pytest.raises(SystemExit) as e:
        cli.parse_args(argv)
    assert e.value.code == 2
    assert "error:" in capsys.readouterr().err


# ---- progress bar --------------------------------------------------------------------------------------------

def test_progress_bar_log_mode_prints_few_lines():
    import io

    buf = io.StringIO()
    t = [0.0]
    p = Progress(100, stream=buf, is_tty=False, clock=lambda: t[0])
    for i in range(100):
        t[0] += 1
        p.advance(1, f"unit {i}")
    p.close()
    lines = buf.getvalue().splitlines()
    assert 10 <= len(lines) <= 11
    assert lines[-1].startswith("[" + "#" * 24 + "] 100%") and "unit 99" in lines[-1]
    assert "eta 0:50" in next(line for line in lines if " 50%" in line)


def test_progress_bar_tty_mode_redraws_in_place():
    import io

    buf = io.StringIO()
    p = Progress(4, stream=buf, is_tty=True)
    for _ in range(4):
        p.advance(1, "x")
    p.close()
    assert buf.getvalue().count("\r") == 4 and buf.getvalue().endswith("\n")


# ---- the no-GPU path ------------------------------------------------------------------------------------------

def _has_hopper():
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


@pytest.mark.skipif(_has_hopper(), reason="this machine has a Hopper GPU: the benchmark would run")
def test_without_hopper_runs_self_check_and_exits_nonzero(tmp_path):
    start = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "fa3lite.bench", "--quick", "--out", str(tmp_path / "o")],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert res.returncode == cli.EXIT_NO_HOPPER
    lines = [ln for ln in res.stderr.splitlines() if "no Hopper GPU" in ln]
    assert len(lines) == 1 and "reference self-check" in lines[0]
    assert "Reference self-check" in res.stdout and "vs float64" in res.stdout
    assert "WRONG" not in res.stdout and "FAILED" not in res.stdout + res.stderr
    assert not (tmp_path / "o").exists()  # nothing to write without a GPU
    assert time.monotonic() - start < 60


def test_self_check_passes_on_cpu():
    from fa3lite.bench.selfcheck import reference_self_check

    check = reference_self_check()
    assert check.ok
    assert check.ran >= 4 or any("skipped" in line for line in check.lines)


def test_environment_record_has_identity_fields():
    from fa3lite.bench.envinfo import collect_env, source_hash

    env = collect_env()
    for key in ("device", "driver", "torch", "cudnn", "fa3lite_commit", "fa3lite_source_hash", "date_utc"):
        assert key in env
    assert env["torch"] == torch.__version__
    assert len(source_hash()) == 16 and source_hash() == env["fa3lite_source_hash"]
    assert env["fa3lite_commit"]


def test_host_time_table_has_a_column_per_mode():
    run = BenchRun(meta={}, config={})
    run.host_times = [HostTime("fa3lite", OK, 30.0, 31.0, mode="fwd"), HostTime("fa3lite", OK, 50.0, 51.0, mode="fwd_grad"),
                      HostTime("fa3lite", OK, 300.0, 301.0, mode="fwd_bwd"),
                      HostTime("fa3lite_graph", OK, 6.0, 7.0, mode="fwd"), HostTime("fa4", ABSENT, reason="absent")]
    text = report.format_host_times(run, {}, "B=1")
    lines = {line.split()[0]: line.split() for line in text.splitlines()[2:]}
    assert lines["fa3lite"][1:] == ["30.0", "50.0", "300.0", "31.0"]
    assert lines["fa3lite_graph"][1:] == ["6.0", "-", "-", "7.0"]
    assert "absent" in lines["fa4"][1]


def test_soak_runs_the_step_back_to_back_for_its_duration(monkeypatch):
    """The soak before a timed batch: the step runs over the input sets in turn until its time has passed, the host
    never more than SOAK_AHEAD calls ahead of the GPU (it waits on the oldest call's event)."""
    from fa3lite.bench import timing

    clock = [0.0]
    pending = []

    class Event:
        def record(self):
            pending.append(self)

        def synchronize(self):
            assert self in pending
            pending.remove(self)

    monkeypatch.setattr(timing.time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(torch.cuda, "Event", Event)
    calls = []

    def step(i):
        calls.append(i)
        clock[0] += 0.01   # each call advances the clock by 10 ms
        assert len(pending) <= timing.SOAK_AHEAD

    timing.soak(step, 3, 0.2)
    assert len(calls) == 20 and calls[:4] == [0, 1, 2, 0]
    with pytest.raises(ValueError, match="soak_s"):
        timing.CudaTimer(warmup=0, reps=1, soak_s=-0.1)


def test_host_times_are_measured_in_interleaved_rounds(monkeypatch):
    """CudaTimer.host_times: every step warmed up, then each round times one batch of every step in
    turn (a slow spell of the machine hits all implementations alike), contexts entered per batch."""
    import contextlib

    from fa3lite.bench.timing import CudaTimer

    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    order, entered = [], []

    def step(name):
        return (lambda: order.append(name)), (lambda: contextlib.nullcontext(entered.append(name)))

    got = CudaTimer(warmup=2, reps=20).host_times([step("a"), step("b")], calls=2, rounds=3)
    assert len(got) == 2 and all(h > 0 and w >= h for h, w in got)
    assert order == ["a"] * 3 + ["b"] * 3 + ["a", "a", "b", "b"] * 3
    assert entered == ["a", "b"] + ["a", "b"] * 3
