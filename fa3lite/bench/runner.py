"""Runs the grid: for each cell, every implementation on the same inputs, checked, then timed.

Per cell: allocate enough rotated input sets (B, S, H, d) to exceed L2 several times and compute
the reference on two sampled heads of set 0. Then, per implementation: bind it; check its forward on
set 0 by FA3's rule, then (when a backward mode is asked for) its dq, dk, dv, and time each mode whose
check passed (fwd needs the forward check, bwd and fwd+bwd the backward one). With rounds > 1 the
cell's (implementation, mode) pairs are then timed again, `rounds - 1` times in turn, the per-call
times pooled: the GPU's clock drifts by up to ~10% over seconds under load, and interleaving makes
the drift hit every implementation of a cell alike instead of whichever ran in a slow stretch. Each
further round starts the implementations one place later (_rotated), so none is always timed last,
when sustained load has warmed the GPU most.
fa3lite (default and deterministic backward alike) is also checked once per (head dim, mask) at a
length that is no multiple of any tile (ODD_SEQLEN); a wrong answer there marks the cells of that
head dim and mask WRONG. A failure of one implementation on one cell (exception, OOM, wrong answer)
never stops the others; a CUDA fault (the context is lost) stops all.
The timer is injected, so the orchestration runs on the CPU in tests with a fake timer.
"""
from __future__ import annotations

import contextlib
import math
import time
import warnings
import zlib

import torch

from .flops import cell_flops
from .grid import Cell, GridSpec
from .reference import (
    TORCH_DTYPES,
    Verdict,
    check_against,
    fa3_verdict,
    head_reference,
    oracle_forward,
    random_inputs,
    run_with_grads,
    sample_heads,
)
from .results import (
    ABSENT,
    OK,
    OOM,
    SKIPPED,
    UNSUPPORTED,
    WRONG,
    CheckRecord,
    HostTime,
    Measurement,
)
from .impls import FA3LITE_IMPLS, fa3lite_host_entries
from .timing import Stats, rotation_sets

ODD_SEQLEN = 1000  # not a multiple of 64, 80, 128, 176 or 192: exercises every tile's ragged tail
ODD_HEADS = 2
HOST_SHAPE = dict(batch=1, seqlen=128, heads=16, head_dim=128)
MAX_REASON_CHARS = 240
REASON_LINES = 3
TIME_BUDGET_REASON = "time budget spent"


class Refused(Exception):
    """An implementation could not produce a result: status is UNSUPPORTED or OOM, or WRONG when
    it broke the CUDA context (a fault is a bug, not a refusal)."""

    def __init__(self, status: str, reason: str):
        if is_fatal(reason):
            status, reason = WRONG, "CUDA fault: " + reason
        super().__init__(reason)
        self.status, self.reason = status, reason


def exception_reason(exc: BaseException, caught: list | None = None) -> str:
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    # The first lines: fa3lite's InputError puts the actual problems on the lines after a header.
    text = f"{type(exc).__name__}: {' '.join(lines[:REASON_LINES])}"
    # SDPA explains a refusal in warnings and raises a generic "No available kernel".
    hints = [str(w.message).strip().splitlines()[0] for w in (caught or []) if str(w.message).strip()]
    if hints:
        text += " [" + "; ".join(dict.fromkeys(hints)) + "]"
    return text[:MAX_REASON_CHARS]


# Errors after which the CUDA context is unusable: every later call in this process would fail too.
FATAL_MARKERS = (
    "illegal memory access", "illegal address", "unspecified launch failure", "misaligned address",
    "illegal instruction", "device-side assert", "cuda_error_launch_failed", "launch timed out",
)


def is_fatal(reason: str) -> bool:
    text = reason.lower()
    return any(marker in text for marker in FATAL_MARKERS)


def is_oom(exc: BaseException) -> bool:
    return isinstance(exc, torch.cuda.OutOfMemoryError) or "out of memory" in str(exc).lower()


def guarded(fn):
    """fn() or Refused(UNSUPPORTED / OOM) with the reason, warnings folded in."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            return fn()
        except Refused:
            raise
        except Exception as exc:
            raise Refused(OOM if is_oom(exc) else UNSUPPORTED, exception_reason(exc, caught)) from exc


def compared(compare, got, got_grads) -> list[Verdict]:
    """compare(got, got_grads) -> verdicts, with an output that cannot even be compared (wrong
    shape, ...) a failure."""
    try:
        return compare(got, got_grads)
    except Exception as exc:
        return [Verdict("out", math.inf, 0.0, finite=False, note=f"not comparable: {exception_reason(exc)}")]


def _verdicts(refs, got, got_grads):
    """check_against on the reference heads, through compared."""
    return compared(lambda o, g: check_against(refs, o, g), got, got_grads)


PART_OF_MODE = {"fwd": "fwd", "bwd": "bwd", "fwdbwd": "bwd"}


def _describe(verdicts) -> str:
    return "; ".join(v.describe() for v in verdicts)


def training_forward(call, q, k, v):
    """out = call(q, k, v) as in training (inputs require grad, grad mode on), graph dropped."""
    leaves = [t.detach().requires_grad_(True) for t in (q, k, v)]
    with torch.enable_grad():
        return call(*leaves).detach()


def _entered(*factories):
    """A context factory entering every factory's context (outermost first)."""

    @contextlib.contextmanager
    def both():
        with contextlib.ExitStack() as stack:
            for f in factories:
                stack.enter_context(f())
            yield

    return both


def check_parts(bound, inputs, grads: bool, compare) -> dict:
    """{'fwd': (status, detail)} and, with grads, {'bwd': ...}: the forward alone first, so an
    implementation whose backward refuses or is wrong still gets its forward timed. inputs: (q, k,
    v, dout) in bound's layout; compare(out, grads or None) -> verdicts (run through compared)."""
    q, k, v, dout = inputs
    result = {}
    try:
        with bound.context():
            got = guarded(lambda: training_forward(bound.call, q, k, v))
        verdicts = compared(compare, got, None)
        del got
        result["fwd"] = (OK if all(x.ok for x in verdicts) else WRONG, _describe(verdicts))
    except Refused as r:
        result["fwd"] = (r.status, r.reason)
    if not grads:
        return result
    if result["fwd"][0] != OK:
        result["bwd"] = (result["fwd"][0], "forward: " + result["fwd"][1])
        return result
    try:
        with bound.context():
            got, got_grads = guarded(lambda: run_with_grads(bound.call, q, k, v, dout, True))
        verdicts = compared(compare, got, got_grads)
        del got, got_grads
        result["bwd"] = (OK if all(x.ok for x in verdicts) else WRONG, _describe(verdicts))
    except Refused as r:
        result["bwd"] = (r.status, r.reason)
    return result


def _rotated(jobs, r: int) -> list[int]:
    """Job indices for timing round r >= 1: the implementations in round 1's order rotated right by r
    (each implementation's jobs together, in their order). Under sustained load the GPU warms through
    a cell and whatever runs later is throttled more: rotating gives every implementation each place."""
    names = list(dict.fromkeys(impl.name for impl, _, _ in jobs))
    k = r % len(names) if names else 0
    order = names[len(names) - k:] + names[:len(names) - k]
    return [n for name in order for n, (impl, _, _) in enumerate(jobs) if impl.name == name]


class CaseTimings:
    """The timed jobs of one case (a grid cell or a feature row): (impl, mode, bound) whose check
    passed. Each is timed once right after its check (add), then again in every later round in rotated
    order (later_rounds), its per-call times pooled (add_pooled_rows). A refusal under the timer (an OOM, a
    fault) becomes the job's row and ends the job; nothing is timed after a CUDA fault, and a job
    keeps what earlier rounds gave it.

    runner: the CaseRunner (fatal, rounds, cleanup); label: the case's, for the fatal message;
    time(bound, mode) -> [ms per call]; row(impl, mode, status, stats=None, reason=""): add a job's
    row to out (a refusal's, and the pooled ones at the end)."""

    def __init__(self, runner: "CaseRunner", out: list, label: str, time, row):
        self.runner, self.out, self.label = runner, out, label
        self.time, self.row = time, row
        self.jobs: list = []
        self.times: dict[int, list[float]] = {}   # job index -> per-call ms, while the job is live

    def add(self, job) -> None:
        """A job whose check passed: timed now, its first round."""
        self.times[len(self.jobs)] = []
        self.jobs.append(job)
        self._time(len(self.jobs) - 1)

    def later_rounds(self, on_timed=None) -> None:
        """Rounds 2 .. runner.rounds; on_timed(impl, started) after each job's timing (wall clocks)."""
        for r in range(1, self.runner.rounds):
            for n in _rotated(self.jobs, r):
                started = self.runner.clock()
                self._time(n)
                if on_timed is not None:
                    on_timed(self.jobs[n][0], started)

    def add_pooled_rows(self) -> None:
        """Each job not refused: its row with the pooled Stats, or SKIPPED with runner.fatal for a job
        never timed (a CUDA fault came before its first round)."""
        for n, ms in self.times.items():
            impl, mode, _ = self.jobs[n]
            if ms:
                self.row(impl, mode, OK, Stats.of(ms))
            else:
                self.row(impl, mode, SKIPPED, reason=self.runner.fatal)

    def _time(self, n: int) -> None:
        if self.runner.fatal or n not in self.times:
            return
        impl, mode, bound = self.jobs[n]
        try:
            self.times[n] += guarded(lambda: self.time(bound, mode))
        except Refused as r:
            self.row(impl, mode, r.status, reason=r.reason)
            del self.times[n]
            self.runner._note_fatal(self.out, impl, self.label)
        self.runner._cleanup()


def time_mode(timer, bound, sets, mode: str):
    """Milliseconds per call. Every mode runs as in training: inputs that require grad, grad
    mode on (the forward saves what its backward needs). bwd times the backward alone, from
    graphs built beforehand (retain_graph, so each set's graph serves every repetition). sets:
    (q, k, v, dout) tuples in bound's layout; timer as GridRunner's."""
    n = len(sets)
    leaves = [tuple(t.detach().requires_grad_(True) for t in s[:3]) for s in sets]
    if mode == "fwd":
        def step(i):
            bound.call(*leaves[i])
    elif mode == "bwd":
        with bound.context(), torch.enable_grad():
            outs = [bound.call(*lv) for lv in leaves]

        def step(i):
            torch.autograd.grad(outs[i], leaves[i], sets[i][3], retain_graph=True)
    else:
        def step(i):
            o = bound.call(*leaves[i])
            torch.autograd.grad(o, leaves[i], sets[i][3])

    return timer.time(step, n, _entered(bound.context, torch.enable_grad))


class CaseRunner:
    """What the grid's, the feature rows' and the decode grid's runners share: the implementations,
    timer, device and L2 size, absent implementations ({impl name: reason}), the time budget
    (deadline on `clock`), progress, the input seed, the check records, `fatal`: why nothing may
    run any more (a lost CUDA context), or None, and the timing rounds per case (GridRunner's and
    FeatureRunner's; the module docstring says why)."""

    def __init__(self, impls, timer, device, *, l2_bytes: int, absent=None, deadline: float | None = None,
                 fatal: str | None = None, progress=None, seed: int = 0, clock=time.monotonic, rounds: int = 1):
        if rounds < 1:
            raise ValueError(f"rounds: expected at least 1, got {rounds}")
        self.rounds = rounds
        self.impls = list(impls)
        self.timer = timer
        self.device = torch.device(device)
        self.l2_bytes = l2_bytes
        self.absent = dict(absent or {})
        self.deadline = deadline
        self.fatal = fatal
        self.progress = progress
        self.seed = seed
        self.clock = clock
        self.checks: list[CheckRecord] = []

    def _out_of_time(self) -> bool:
        return self.deadline is not None and self.clock() >= self.deadline

    def _stop_reason(self) -> str | None:
        """Why no new work may start: a lost CUDA context or the time budget."""
        if self.fatal:
            return self.fatal
        return TIME_BUDGET_REASON if self._out_of_time() else None

    def _generator(self, *key) -> torch.Generator:
        g = torch.Generator(device=self.device)
        # crc32 of the key's text: the same inputs in every run (str hash() is salted per process).
        g.manual_seed(zlib.crc32(repr((self.seed,) + key).encode()))
        return g

    def _cleanup(self):
        if self.device.type == "cuda" and not self.fatal:
            torch.cuda.empty_cache()

    def _note_fatal(self, out, impl, label: str):
        """`fatal` set when one of impl's rows in out reports a CUDA fault (the context is lost)."""
        if any(m.impl == impl.name and is_fatal(m.reason) for m in out):
            self.fatal = f"CUDA context lost after {impl.name} at {label}"


class GridRunner(CaseRunner):
    """Orchestrates checks and timings. timer: .time(step, n_sets, context) -> [ms],
    .host_times([(call, context factory)]) -> [(host_us, wall_us)], interleaved. absent: {impl name: reason}."""

    def __init__(self, impls, spec: GridSpec, timer, device, *, l2_bytes: int, absent=None,
                 progress=None, deadline: float | None = None, odd_check: bool = True,
                 odd_check_impls=FA3LITE_IMPLS, seed: int = 0, clock=time.monotonic, on_result=None,
                 rounds: int = 1):
        super().__init__(impls, timer, device, l2_bytes=l2_bytes, absent=absent, deadline=deadline,
                         progress=progress, seed=seed, clock=clock, rounds=rounds)
        self.spec = spec
        self.dtype = TORCH_DTYPES[spec.dtype]
        self.odd_check = odd_check
        self.odd_check_impls = tuple(odd_check_impls)
        self.on_result = on_result or (lambda m: None)
        self._odd: dict[tuple, dict] = {}
        self._oracle_done: set[tuple] = set()
        self.wall_s: dict[str, float] = {}  # per implementation: checks, compiles and timing together

    # ---- the grid -------------------------------------------------------------------------
    def run(self, cells: list[Cell]) -> list[Measurement]:
        results = []
        for cell in cells:
            results += self._run_cell(cell)
        return results

    def work_weight(self, cells: list[Cell]) -> float:
        """Progress weight of the grid: FLOPs of every (cell, live implementation, mode)."""
        live = sum(1 for i in self.impls if i.name not in self.absent)
        return sum(cell_flops(c, m) for c in cells for m in self.spec.modes) * max(live, 1)

    def _execution_order(self, impls):
        """fa3lite's implementations last in each cell: if a fault of the kernels under test kills
        the CUDA context, the peers of that cell are already measured."""
        return sorted(impls, key=lambda i: i.name in FA3LITE_IMPLS)

    def _emit(self, out: list, m: Measurement) -> None:
        out.append(m)
        self.on_result(m)

    def _all_modes(self, out, impl, cell, status, reason):
        for mode in self.spec.modes:
            self._emit(out, _measurement(impl, cell, mode, status, reason=reason))

    def _advance(self, cell, impl_name):
        if self.progress is not None:
            weight = sum(cell_flops(cell, m) for m in self.spec.modes)
            self.progress.advance(weight, f"{cell.label} {impl_name}")

    def _run_cell(self, cell: Cell) -> list[Measurement]:
        out: list[Measurement] = []
        live = []
        for impl in self.impls:
            if impl.name in self.absent:
                self._all_modes(out, impl, cell, ABSENT, self.absent[impl.name])
            else:
                live.append(impl)
        if self._stop_reason():
            for impl in live:
                self._all_modes(out, impl, cell, SKIPPED, self._stop_reason())
                self._advance(cell, impl.name)
            return out
        grads = any(m != "fwd" for m in self.spec.modes)
        sets = refs = None
        try:
            sets = self._inputs(cell)
            refs = [
                head_reference(*sets[0], b, h, self._scale(cell), cell.causal, 0, grads)
                for b, h in sample_heads(cell.batch, cell.heads)
            ]
        except Exception as exc:
            status = OOM if is_oom(exc) else SKIPPED
            for impl in live:
                self._all_modes(out, impl, cell, status, "inputs/reference: " + exception_reason(exc))
                self._advance(cell, impl.name)
            sets = refs = None
            self._cleanup()
            return out
        # Round 1 checks and times one implementation after another (the peers first: a fault of
        # fa3lite's then leaves them measured); the further rounds time every job again in turn.
        timings = CaseTimings(
            self, out, cell.label, lambda bound, mode: self._time_mode(bound, sets, mode),
            lambda impl, mode, status, stats=None, reason="": self._emit(
                out, _measurement(impl, cell, mode, status, stats, reason)))
        for impl in self._execution_order(live):
            if self._stop_reason():
                self._all_modes(out, impl, cell, SKIPPED, self._stop_reason())
            else:
                started = self.clock()
                for job in self._check_impl(out, impl, cell, sets, refs, grads):
                    timings.add(job)
                self._add_wall(impl, started)
                self._note_fatal(out, impl, cell.label)
            self._cleanup()
        timings.later_rounds(self._add_wall)
        timings.add_pooled_rows()
        for impl in live:
            self._advance(cell, impl.name)
        del sets, refs, timings
        self._cleanup()
        order = {i.name: n for n, i in enumerate(self.impls)}
        modes = {m: n for n, m in enumerate(self.spec.modes)}
        return sorted(out, key=lambda m: (order[m.impl], modes[m.mode]))

    def _scale(self, cell_or_dim) -> float:
        d = cell_or_dim if isinstance(cell_or_dim, int) else cell_or_dim.head_dim
        return d ** -0.5

    def _inputs(self, cell: Cell):
        """n_sets tuples (q, k, v, dout), each (B, S, H, d) in the grid's dtype."""
        elt = torch.tensor([], dtype=self.dtype).element_size()
        n = rotation_sets(3 * cell.elements * elt, self.l2_bytes)
        g = self._generator(cell.head_dim, cell.causal, cell.seqlen)
        return [
            random_inputs(cell.batch, cell.seqlen, cell.seqlen, cell.heads, cell.head_dim,
                          self.dtype, self.device, g)
            for _ in range(n)
        ]

    def _add_wall(self, impl, started: float):
        self.wall_s[impl.name] = self.wall_s.get(impl.name, 0.0) + self.clock() - started

    def _check_impl(self, out, impl, cell, sets, refs, grads) -> list:
        """Check (forward, then backward); gives (impl, mode, bound) for each mode whose check passed
        and emits the others."""
        odd = self._odd_length_check(impl, cell.head_dim, cell.causal, grads) if self._odd_wanted(impl) else {}
        scale = self._scale(cell)
        try:
            bound = guarded(lambda: impl.bind(cell.causal, cell.seqlen, cell.seqlen, scale, self.device))
        except Refused as r:
            self._record(impl.name, cell.head_dim, cell.causal, cell.seqlen, r.status, r.reason)
            self._all_modes(out, impl, cell, r.status, r.reason)
            return []
        verdict = self._check(bound, sets[0], refs, grads)
        for part, (status, detail) in verdict.items():
            self._record(impl.name, cell.head_dim, cell.causal, cell.seqlen, status, f"[{part}] {detail}")
        for part, (status, detail) in odd.items():
            if status == WRONG and verdict.get(part, (OK,))[0] == OK:
                verdict[part] = (WRONG, f"at S={ODD_SEQLEN}: {detail}")
        jobs = []
        for mode in self.spec.modes:
            status, detail = verdict[PART_OF_MODE[mode]]
            if status != OK:
                self._emit(out, _measurement(impl, cell, mode, status, reason=detail))
            else:
                jobs.append((impl, mode, bound))
        return jobs

    def _check(self, bound, inputs, refs, grads: bool) -> dict:
        """check_parts against the reference heads."""
        return check_parts(bound, inputs, grads, lambda got, got_grads: check_against(refs, got, got_grads))

    def _time_mode(self, bound, sets, mode: str):
        return time_mode(self.timer, bound, sets, mode)

    def _record(self, impl, d, causal, seqlen, status, detail):
        self.checks.append(CheckRecord(impl, d, causal, seqlen, status, detail))

    def _odd_wanted(self, impl) -> bool:
        return self.odd_check and impl.name in self.odd_check_impls

    def _odd_length_check(self, impl, d: int, causal: bool, grads: bool) -> dict:
        """_check at B=1, H=2, S=ODD_SEQLEN, cached per (implementation, head dim, mask). Only a
        WRONG answer counts against the grid cells: refusing this length is allowed."""
        key = (impl.name, d, causal)
        if key in self._odd:
            return self._odd[key]
        scale = self._scale(d)
        inputs = random_inputs(1, ODD_SEQLEN, ODD_SEQLEN, ODD_HEADS, d, self.dtype,
                               self.device, self._generator(d, causal, ODD_SEQLEN))
        refs = [head_reference(*inputs, 0, h, scale, causal, 0, grads) for h in range(ODD_HEADS)]
        self._oracle_cross_check(*inputs[:3], refs, d, causal, scale)
        try:
            bound = guarded(lambda: impl.bind(causal, ODD_SEQLEN, ODD_SEQLEN, scale, self.device))
            verdict = self._check(bound, inputs, refs, grads)
        except Refused as r:
            verdict = {"fwd": (r.status, r.reason)}
        for part, (status, detail) in verdict.items():
            self._record(impl.name, d, causal, ODD_SEQLEN, status, f"[{part}] {detail}")
        self._odd[key] = verdict
        return verdict

    def _oracle_cross_check(self, q, k, v, refs, d, causal, scale):
        """Once per (head dim, mask): the Numba oracle's forward against this module's reference."""
        if (d, causal) in self._oracle_done:
            return
        self._oracle_done.add((d, causal))
        got = oracle_forward(q, k, v, scale, causal, 0)
        if isinstance(got, str):
            self._record("numba-oracle", d, causal, ODD_SEQLEN, SKIPPED, got)
            return
        verdicts = [fa3_verdict("out", got[0, :, r.head, :], r.ref["out"], r.pt["out"]) for r in refs]
        ok = all(v.ok for v in verdicts)
        self._record("numba-oracle", d, causal, ODD_SEQLEN, OK if ok else WRONG,
                     "vs torch fp32 reference: " + "; ".join(v.describe() for v in verdicts))

    # ---- host time at a tiny shape ----------------------------------------------------------
    def host_times(self) -> list[HostTime]:
        """Host time per call at HOST_SHAPE (full mask) for every host_timed implementation in each
        HOST_MODES mode, then fa3lite's other entries (HostTime's docstring). Each is checked against
        the reference first; then all are timed together in interleaved rounds (timer.host_times), so
        that the table compares them under the same machine conditions."""
        s = HOST_SHAPE
        scale = self._scale(s["head_dim"])
        if self.fatal:
            return [HostTime(i.name, SKIPPED, reason=self.fatal) for i in self.impls if i.host_timed]
        results = []
        q, k, v, dout = random_inputs(s["batch"], s["seqlen"], s["seqlen"], s["heads"], s["head_dim"],
                                      self.dtype, self.device, self._generator("host"))
        refs = [head_reference(q, k, v, dout, b, h, scale, False, 0, False)
                for b, h in sample_heads(s["batch"], s["heads"])]
        entries = [(impl.name, impl.bind) for impl in self.impls if impl.host_timed]
        if (self.device.type == "cuda" and "fa3lite" not in self.absent
                and any(impl.name == "fa3lite" for impl in self.impls)):
            entries += fa3lite_host_entries()
        timed = []   # (index in results, name, mode, step, context): measured together at the end
        for name, bind in entries:
            if name in self.absent:
                results.append(HostTime(name, ABSENT, reason=self.absent[name]))
                continue
            if self._stop_reason():
                results.append(HostTime(name, SKIPPED, reason=self._stop_reason()))
                continue
            try:
                bound = guarded(lambda: bind(False, s["seqlen"], s["seqlen"], scale, self.device))
                with bound.context():
                    got, _ = guarded(lambda: run_with_grads(bound.call, q, k, v, dout, False))
                verdicts = _verdicts(refs, got, None)
                if not all(x.ok for x in verdicts):
                    results.append(HostTime(name, WRONG, reason=_describe(verdicts)))
                    continue
                for mode in bound.host_modes:
                    step, context = _host_step(bound, mode, q, k, v, dout)
                    with context():
                        guarded(step)          # runs before it is timed (a refusal shows here)
                    timed.append((len(results), name, mode, step, context))
                    results.append(None)
            except Refused as r:
                results.append(HostTime(name, r.status, reason=r.reason))
        try:
            times = guarded(lambda: self.timer.host_times([(step, context) for *_, step, context in timed]))
        except Refused as r:
            times = [r] * len(timed)
        for (at, name, mode, _, _), got in zip(timed, times):
            results[at] = (HostTime(name, got.status, reason=got.reason, mode=mode) if isinstance(got, Refused)
                           else HostTime(name, OK, got[0], got[1], mode=mode))
        self._cleanup()
        return results


def _measurement(impl, cell: Cell, mode: str, status: str, stats: Stats | None = None,
                 reason: str = "") -> Measurement:
    """A Measurement of ``impl``, carrying its Impl.deterministic."""
    return Measurement(impl.name, cell, mode, status, stats, reason, impl.deterministic)


def _host_step(bound, mode: str, q, k, v, dout):
    """(step, context factory) issuing one call of ``bound`` in ``mode`` (HostTime.mode); q, k, v, dout
    (B, S, H, d). An entry in torch's layout (bound.torch_layout) gets (B, H, S, d) views of them, made
    here once, as a caller in that layout has its tensors."""
    call = bound.call
    if bound.torch_layout is not None:
        call = bound.torch_layout
        q, k, v, dout = (t.transpose(1, 2) for t in (q, k, v, dout))
    if mode == "fwd":
        return (lambda: call(q, k, v)), _entered(bound.context, torch.no_grad)
    leaves = [t.detach().requires_grad_(True) for t in (q, k, v)]
    if mode == "fwd_grad":
        return (lambda: call(*leaves)), _entered(bound.context, torch.enable_grad)
    if mode == "fwd_bwd":
        return (lambda: torch.autograd.grad(call(*leaves), leaves, dout)), \
            _entered(bound.context, torch.enable_grad)
    raise ValueError(f"unknown host-time mode {mode!r}")
