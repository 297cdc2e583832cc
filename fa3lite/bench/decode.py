"""Runs the decode grid (decode_cases.py): every implementation (decode_impls.py) on each case is
checked at the case's reduced size, then timed; plus the device's copy bandwidth, measured once per
run, and the host time per call at one small decode shape.

Check (before any timing): out (B, Sq, Hq, d) of every element at case.reduced() (cache and batch
capped, layout, heads and Sq kept) by FA3's rule (reference.fa3_verdict) against an fp32 reference
and the same math in the input dtype (decode_inputs.decode_reference). An appending implementation
is checked on a copy of the cache whose appended rows are zeroed, so it passes only if it writes
them where they belong. Verdicts are kept per (implementation, reduced case): the cases that differ
only in their full cache length share one check. A WRONG answer is recorded and not timed; a refusal
or an exception is UNSUPPORTED (OOM), as in the grid.

Timing: forward without grad over input sets rotated past L2 (decode_sets), one call per set captured
in a CUDA graph and the graph replayed (timer.time_graphed): the GPU's time per decode step without
host gaps, as servers replay captured steps (the host's cost per call is its own table). An
implementation whose call cannot be captured is timed eagerly (timer.time), with a note. A case's
sets are made once and shared by its implementations; fa3lite's two rows run last (a fault of the
kernels under test leaves the peers measured; the appending row, which writes the cache, after all).
"""
from __future__ import annotations

import contextlib
import functools
import math
import time

import torch

from .decode_cases import CHECK_CACHE_LEN, CONTIGUOUS, HEAD_DIM, DecodeCase, copy_gbs
from .decode_impls import DECODE_FA3LITE_IMPLS, DecodeBound
from .decode_inputs import decode_reference, make_inputs, with_stale_tail
from .reference import TORCH_DTYPES, fa3_verdict
from .results import ABSENT, OK, OOM, SKIPPED, WRONG, CheckRecord, DecodeMeasurement, HostTime
from .runner import CaseRunner, Refused, compared, exception_reason, guarded, is_fatal, is_oom
from .timing import L2_MULTIPLE, Stats

COPY_BYTES = 2 * 2**30          # the copy that measures the device's bandwidth: far past any L2
DECODE_MAX_SETS = 64            # small caches: enough sets (4 MB each at B=1, 1k) to exceed 4 x L2
HOST_CASE = DecodeCase(sq=1, batch=1, cache_len=CHECK_CACHE_LEN, heads_q=32, heads_kv=8, head_dim=HEAD_DIM,
                       page_size=CONTIGUOUS)


def decode_sets(set_bytes: int, l2_bytes: int) -> int:
    """Input sets to rotate among: together past L2_MULTIPLE x L2, at most DECODE_MAX_SETS, and a
    single one when it alone is past that (the largest case's cache is 34 GB: a second would not fit)."""
    if set_bytes <= 0:
        raise ValueError(f"set_bytes: expected a positive size, got {set_bytes}")
    return max(1, min(DECODE_MAX_SETS, math.ceil(L2_MULTIPLE * l2_bytes / set_bytes)))


def measure_copy_bandwidth(timer, device, nbytes: int | None = None) -> float:
    """GB/s of a device-to-device copy of nbytes (COPY_BYTES when None): bytes read + written over the
    median time."""
    nbytes = COPY_BYTES if nbytes is None else nbytes
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    times = timer.time(lambda i: dst.copy_(src), 1)
    return copy_gbs(nbytes, Stats.of(times).median)


def _entered(*factories):
    """A context factory entering every factory's context (outermost first)."""

    @contextlib.contextmanager
    def entered():
        with contextlib.ExitStack() as stack:
            for factory in factories:
                stack.enter_context(factory())
            yield

    return entered


def _same_shape(out: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """out, or ValueError when its shape is not ref's (a broadcast would compare nonsense)."""
    if tuple(out.shape) != tuple(ref.shape):
        raise ValueError(f"out shape {tuple(out.shape)}, expected {tuple(ref.shape)}")
    return out


class DecodeRunner(CaseRunner):
    """Checks and times the decode cases. impls: decode_impls.DecodeImpl objects; timer: .time(step,
    n_sets, context) -> [ms], .time_graphed (the same, from CUDA-graph replays) and
    .host_time(call, context=) -> (host_us, wall_us), as GridRunner's;
    absent: {impl name: reason}. Rows gather in `rows` as each case finishes (kept when interrupted),
    check records in `checks`."""

    def __init__(self, impls, timer, device, *, l2_bytes: int, absent=None, deadline: float | None = None,
                 progress=None, seed: int = 0, clock=time.monotonic):
        super().__init__(impls, timer, device, l2_bytes=l2_bytes, absent=absent, deadline=deadline,
                         progress=progress, seed=seed, clock=clock)
        self.rows: list[DecodeMeasurement] = []
        self._verdicts: dict[tuple, tuple[str, str]] = {}
        self._eager: dict[str, str] = {}   # impl name -> why its calls could not be graph-captured
        self._check_data: tuple | None = None  # (reduced case, inputs, ref, pt) of the latest check

    def run(self, cases: list[DecodeCase]) -> list[DecodeMeasurement]:
        for case in cases:
            self.rows += self._run_case(case)
        self._check_data = None
        return self.rows

    def work_weight(self, cases: list[DecodeCase]) -> float:
        """Progress weight: K/V bytes of every (case, live implementation)."""
        return float(sum(case.kv_bytes for case in cases for _ in self._live()))

    def notes(self) -> list[str]:
        """What the adapters decided on the way (decode_impls.DecodeImpl.notes), and which were timed
        eagerly because their call could not be captured in a CUDA graph."""
        eager = [f"{name}: timed eagerly (host gaps included), CUDA-graph capture failed: {why}"
                 for name, why in self._eager.items()]
        return [note for impl in self.impls for note in impl.notes] + eager

    def _live(self):
        return [i for i in self.impls if i.name not in self.absent]

    def _advance(self, case, impl):
        if self.progress is not None:
            self.progress.advance(case.kv_bytes, f"{case.label} {impl.name}")

    def _run_case(self, case: DecodeCase) -> list[DecodeMeasurement]:
        out = [DecodeMeasurement(i.name, case, ABSENT, reason=self.absent[i.name])
               for i in self.impls if i.name in self.absent]
        shared = {}
        # fa3lite last, its appending call (which writes the cache) after everything else.
        for impl in sorted(self._live(), key=lambda i: (i.name in DECODE_FA3LITE_IMPLS, i.appends)):
            stop = self._stop_reason()
            if stop:
                out.append(DecodeMeasurement(impl.name, case, SKIPPED, reason=stop))
            else:
                out.append(self._run_impl(impl, case, shared))
                if is_fatal(out[-1].reason):
                    self.fatal = f"CUDA context lost after {impl.name} at {case.label}"
            self._cleanup()
            self._advance(case, impl)
        shared.clear()
        self._cleanup()
        order = {i.name: n for n, i in enumerate(self.impls)}
        return sorted(out, key=lambda m: order.get(m.impl, len(order)))

    def _run_impl(self, impl, case: DecodeCase, shared: dict) -> DecodeMeasurement:
        """Check at the reduced size, then time. shared: the case's timing input sets ("sets"), made
        by the first implementation that gets that far and reused by the rest."""
        status, detail = self._check(impl, case.reduced())
        if status != OK:
            return DecodeMeasurement(impl.name, case, status, reason=detail)
        try:
            if "sets" not in shared:
                shared["sets"] = self._timing_sets(case)
            bound = guarded(lambda: impl.bind(case, self.device))
            times = guarded(functools.partial(self._time, bound, shared["sets"], impl.name))
        except Refused as r:
            return DecodeMeasurement(impl.name, case, r.status, reason=r.reason)
        except Exception as exc:
            return DecodeMeasurement(impl.name, case, OOM if is_oom(exc) else SKIPPED,
                                     reason="inputs: " + exception_reason(exc))
        return DecodeMeasurement(impl.name, case, OK, Stats.of(times))

    def _time(self, bound: DecodeBound, sets, impl_name: str = "") -> list[float]:
        def step(i):
            bound.call(sets[i])

        context = _entered(bound.context, torch.no_grad)
        if impl_name not in self._eager:
            try:
                return self.timer.time_graphed(step, len(sets), context)
            except Exception as exc:   # capture unsupported by this implementation: time it eagerly
                if is_fatal(exception_reason(exc)):
                    raise
                self._eager[impl_name] = exception_reason(exc)
        return self.timer.time(step, len(sets), context)

    def _check(self, impl, small: DecodeCase) -> tuple[str, str]:
        """(status, detail) of impl at the reduced case, computed once per (impl, case) and recorded
        in `checks`."""
        key = (impl.name, small)
        if key in self._verdicts:
            return self._verdicts[key]
        try:
            bound = guarded(lambda: impl.bind(small, self.device))
            inputs, ref, pt = self._reference(small)
            given = with_stale_tail(small, inputs) if impl.appends else inputs
            with bound.context(), torch.no_grad():
                got = guarded(lambda: bound.call(given))
            verdicts = compared(lambda o, _: [fa3_verdict("out", _same_shape(o, ref), ref, pt)], got, None)
            del got
            verdict = (OK if all(v.ok for v in verdicts) else WRONG, "; ".join(v.describe() for v in verdicts))
        except Refused as r:
            verdict = (r.status, r.reason)
        except Exception as exc:
            verdict = (OOM if is_oom(exc) else SKIPPED, "inputs/reference: " + exception_reason(exc))
        self._verdicts[key] = verdict
        self.checks.append(CheckRecord(impl.name, small.head_dim, True, small.cache_len, verdict[0],
                                       f"{small.label}: {verdict[1]}"))
        return verdict

    def _reference(self, small: DecodeCase):
        """(inputs, fp32 reference, input-dtype math) of the reduced case; the latest one is kept, as
        consecutive cases mostly share it."""
        if self._check_data is None or self._check_data[0] != small:
            self._check_data = None  # the old case's tensors go before the new ones are made
            inputs = make_inputs(small, self.device, self._generator("check", small))
            ref = decode_reference(small, inputs, torch.float32)
            pt = decode_reference(small, inputs, TORCH_DTYPES[small.dtype])
            self._check_data = (small, inputs, ref, pt)
        return self._check_data[1:]

    def _timing_sets(self, case: DecodeCase):
        g = self._generator("time", case)
        return [make_inputs(case, self.device, g) for _ in range(decode_sets(case.kv_bytes, self.l2_bytes))]

    # ---- host time at a small decode shape ------------------------------------------------------
    def host_times(self, case: DecodeCase | None = None) -> list[HostTime]:
        """Host microseconds per call (mode "fwd": no grad) of each implementation at `case`
        (HOST_CASE when None), after its check there. Seconds of work: the time budget does not
        apply (a run measures it before the grid); a lost CUDA context does."""
        case = HOST_CASE if case is None else case
        results = []
        for impl in self.impls:
            if impl.name in self.absent:
                results.append(HostTime(impl.name, ABSENT, reason=self.absent[impl.name]))
                continue
            if self.fatal:
                results.append(HostTime(impl.name, SKIPPED, reason=self.fatal))
                continue
            status, detail = self._check(impl, case)
            if status != OK:
                results.append(HostTime(impl.name, status, reason=detail))
                continue
            try:
                inputs = make_inputs(case, self.device, self._generator("host", case))
                bound = guarded(lambda: impl.bind(case, self.device))
                host_us, wall_us = guarded(lambda: self.timer.host_time(
                    lambda: bound.call(inputs), context=_entered(bound.context, torch.no_grad)))
                results.append(HostTime(impl.name, OK, host_us, wall_us, mode="fwd"))
            except Refused as r:
                results.append(HostTime(impl.name, r.status, reason=r.reason))
            self._cleanup()
        self._check_data = None
        return results
