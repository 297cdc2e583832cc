"""Runs the feature rows (feature_cases.py): each implementation that has a way to run a case is
checked at the case's reduced shape, then timed in the run's modes, as GridRunner does for the grid.

Implementations: fa3lite (and fa3lite_det when selected) on every case, through flash_attn_func
(window, dense) or flash_attn_varlen_func (varlen), pinned to the kernels; the peers named in
FEATURE_PEERS on the window and varlen cases: FlashAttention-4 (flash_attn.cute's flash_attn_func /
flash_attn_varlen_func, window_size None for an unbounded side, (out, lse) returned), and cuDNN,
whose SDPA entry takes neither a window nor a packed batch: its rows say unsupported. The dense
comparator is fa3lite's own. FA3 and FlexAttention could run these cases too but are not wired in:
the issue's peers are FA4 and cuDNN.

Check (before any timing): out, and with a backward mode dq, dk, dv, of every element at the reduced
shape by FA3's rule against reference.packed_reference (fp32, and `pt` in the input dtype) per
sequence. A WRONG answer is recorded and not timed; a refusal or an exception is UNSUPPORTED (OOM),
as in the grid. Timing: runner.time_mode over input sets rotated past L2 (timing.rotation_sets), in
the grid's interleaved rounds: a case's implementations one after another at first, then every
(implementation, mode) again in rotated order, so that clock drift and the board's power state hit
them alike (timed once each, one after the other, fa3lite's default and deterministic forward, the
same kernel, read 575 and 637 TFLOP/s in section 40's final run; benchmarks/RESULTS.md section 41).
"""
from __future__ import annotations

import importlib
import time

import torch

from .feature_cases import VARLEN, WINDOW, FeatureCase
from .impls import BASELINE, FA3LITE_IMPLS, Bound, first_output
from .reference import TORCH_DTYPES, fa3_verdict, packed_reference, random_inputs
from .results import ABSENT, OK, OOM, SKIPPED, CheckRecord, FeatureMeasurement
from .runner import (
    PART_OF_MODE,
    CaseRunner,
    CaseTimings,
    Refused,
    check_parts,
    exception_reason,
    guarded,
    is_oom,
    time_mode,
)
from .timing import rotation_sets

FA4 = "fa4"  # impls.all_impls' name of FlashAttention-4
FA4_MODULE = "flash_attn.cute"
FEATURE_PEERS = (BASELINE, FA4)
PEER_KINDS = (WINDOW, VARLEN)  # the dense comparator is fa3lite's own kernel, no peer's
SDPA_REFUSAL = "SDPA (cuDNN) takes no window_size and no packed varlen batch"


def applies(impl_name: str, case: FeatureCase) -> bool:
    """Whether the case gets a row of this implementation."""
    if impl_name in FA3LITE_IMPLS:
        return True
    return impl_name in FEATURE_PEERS and case.kind in PEER_KINDS


def bind_feature(impl, case: FeatureCase, device) -> Bound:
    """impl fixed to the case: call(q, k, v) -> out in the case's layout ((B, S, H, d), or (total,
    H, d) packed). Raises NotImplementedError where the implementation has no way to run it."""
    scale = case.head_dim ** -0.5
    if impl.name in FA3LITE_IMPLS:
        return _fa3lite_bound(case, scale, bool(impl.deterministic), device)
    if impl.name == FA4:
        return _fa4_bound(case, scale, device)
    if impl.name == BASELINE:
        raise NotImplementedError(SDPA_REFUSAL)
    raise NotImplementedError(f"{impl.name}: no feature-row adapter")


def _offsets(case: FeatureCase, device) -> torch.Tensor:
    """int32 (n_seqs + 1,) cumulative offsets of the packed sequences."""
    lengths = torch.tensor((0,) + case.seqlens, dtype=torch.int64)
    return lengths.cumsum(0).to(device=device, dtype=torch.int32)


def _fa3lite_bound(case, scale, deterministic, device) -> Bound:
    import fa3lite

    if case.packed:
        fn, cu, longest = fa3lite.flash_attn_varlen_func, _offsets(case, device), case.max_seqlen

        def call(q, k, v):
            return fn(q, k, v, cu, cu, longest, longest, softmax_scale=scale, causal=case.causal,
                      window_size=case.window, deterministic=deterministic, backend="fa3lite")
    else:
        fn = fa3lite.flash_attn_func

        def call(q, k, v):
            return fn(q, k, v, softmax_scale=scale, causal=case.causal, deterministic=deterministic,
                      backend="fa3lite", window_size=case.window)
    return Bound(call)


def _fa4_bound(case, scale, device) -> Bound:
    module = importlib.import_module(FA4_MODULE)
    window = tuple(None if w < 0 else w for w in case.window)  # FA4 spells an unbounded side None
    if case.packed:
        fn, cu, longest = module.flash_attn_varlen_func, _offsets(case, device), case.max_seqlen

        def call(q, k, v):
            return first_output(fn(q, k, v, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=longest,
                             max_seqlen_k=longest, softmax_scale=scale, causal=case.causal, window_size=window))
    else:
        fn = module.flash_attn_func

        def call(q, k, v):
            return first_output(fn(q, k, v, softmax_scale=scale, causal=case.causal, window_size=window))
    return Bound(call)


def _packed(t: torch.Tensor, case: FeatureCase) -> torch.Tensor:
    """A tensor of the case's layout as (total, H, d); ValueError when its shape is not the case's."""
    want = (case.tokens, case.heads, case.head_dim)
    if t.numel() != case.elements or t.shape[-2:] != want[1:]:
        raise ValueError(f"shape {tuple(t.shape)} does not hold {case.n_seqs} sequences of ({case.heads}, "
                         f"{case.head_dim})")
    return t.reshape(want)


class FeatureRunner(CaseRunner):
    """Checks and times the feature cases. impls: the run's Impl objects (those that apply to a case
    get rows); modes: the run's modes; timer and rounds as GridRunner's (each case's jobs timed in
    rotated rounds, the times pooled); absent: {impl name: reason}; fatal: why nothing may run (a
    CUDA context lost in the grid), or None. Rows gather in `rows` as each case finishes (kept when
    interrupted), check records in `checks`."""

    def __init__(self, impls, modes, timer, device, *, l2_bytes: int, absent=None, deadline: float | None = None,
                 fatal: str | None = None, progress=None, seed: int = 0, clock=time.monotonic, rounds: int = 1):
        super().__init__(impls, timer, device, l2_bytes=l2_bytes, absent=absent, deadline=deadline, fatal=fatal,
                         progress=progress, seed=seed, clock=clock, rounds=rounds)
        self.modes = tuple(modes)
        self.rows: list[FeatureMeasurement] = []

    def run(self, cases: list[FeatureCase]) -> list[FeatureMeasurement]:
        for case in cases:
            self.rows += self._run_case(case)
        return self.rows

    def work_weight(self, cases: list[FeatureCase]) -> float:
        """Progress weight: FLOPs of every (case, live implementation that applies, mode)."""
        return sum(case.flops(mode) for case in cases for impl in self._live(case) for mode in self.modes)

    def _live(self, case):
        return [i for i in self.impls if applies(i.name, case) and i.name not in self.absent]

    def _rows(self, impl, case, status, reason="") -> list[FeatureMeasurement]:
        return [FeatureMeasurement(impl.name, case, mode, status, reason=reason, deterministic=impl.deterministic)
                for mode in self.modes]

    def _advance(self, case, impl):
        if self.progress is not None:
            self.progress.advance(sum(case.flops(m) for m in self.modes), f"{case.label} {impl.name}")

    def _run_case(self, case: FeatureCase) -> list[FeatureMeasurement]:
        out = []
        for impl in self.impls:
            if applies(impl.name, case) and impl.name in self.absent:
                out += self._rows(impl, case, ABSENT, self.absent[impl.name])
        shared = {}
        # Round 1 checks and times one implementation after another, fa3lite last as in the grid (a
        # fault of the kernels under test leaves the peers measured); the further rounds time every
        # job again, rotated (runner.CaseTimings), the per-call times pooled.
        timings = CaseTimings(
            self, out, case.label, lambda bound, mode: time_mode(self.timer, bound, shared["inputs"], mode),
            lambda impl, mode, status, stats=None, reason="": out.append(
                FeatureMeasurement(impl.name, case, mode, status, stats, reason, deterministic=impl.deterministic)))
        for impl in sorted(self._live(case), key=lambda i: i.name in FA3LITE_IMPLS):
            stop = self._stop_reason()
            if stop:
                out += self._rows(impl, case, SKIPPED, stop)
            else:
                for job in self._jobs(out, impl, case, shared):
                    timings.add(job)
                self._note_fatal(out, impl, case.label)
            self._cleanup()
            self._advance(case, impl)
        timings.later_rounds()
        timings.add_pooled_rows()
        del timings
        shared.clear()
        self._cleanup()
        order = {i.name: n for n, i in enumerate(self.impls)}
        modes = {m: n for n, m in enumerate(self.modes)}
        return sorted(out, key=lambda m: (order.get(m.impl, len(order)), modes.get(m.mode, len(modes))))

    def _jobs(self, out, impl, case, shared: dict) -> list:
        """Check at the reduced shape; (impl, mode, bound) for each mode whose check passed, the
        others' rows added to out. shared: the case's check inputs and references ("check") and
        timing input sets ("inputs"), made by the first implementation that needs them and reused by
        the rest."""
        verdict = self._check(impl, case, shared)
        if not any(verdict[PART_OF_MODE[m]][0] == OK for m in self.modes):
            out += [self._untimed(impl, case, m, verdict) for m in self.modes]
            return []
        try:
            if "inputs" not in shared:
                shared["inputs"] = self._inputs(case)
            bound = guarded(lambda: bind_feature(impl, case, self.device))
        except Refused as r:
            out += self._rows(impl, case, r.status, r.reason)
            return []
        except Exception as exc:
            out += self._rows(impl, case, OOM if is_oom(exc) else SKIPPED, "inputs: " + exception_reason(exc))
            return []
        jobs = []
        for mode in self.modes:
            if verdict[PART_OF_MODE[mode]][0] == OK:
                jobs.append((impl, mode, bound))
            else:
                out.append(self._untimed(impl, case, mode, verdict))
        return jobs

    def _untimed(self, impl, case, mode, verdict) -> FeatureMeasurement:
        status, detail = verdict[PART_OF_MODE[mode]]
        return FeatureMeasurement(impl.name, case, mode, status, reason=detail, deterministic=impl.deterministic)

    def _check(self, impl, case: FeatureCase, shared: dict) -> dict:
        """check_parts at case.reduced() against packed_reference: {'fwd': (status, detail)} and,
        with a backward mode, {'bwd': ...}; each recorded in `checks`. shared: as in _jobs."""
        small = case.reduced()
        grads = any(m != "fwd" for m in self.modes)
        try:
            bound = guarded(lambda: bind_feature(impl, small, self.device))
            if "check" not in shared:
                shared["check"] = self._check_inputs(small, grads)
            inputs, ref, pt = shared["check"]

            def compare(got, got_grads):
                tensors = {"out": got, **(got_grads or {})}
                return [fa3_verdict(name, _packed(t, small), ref[name], pt[name]) for name, t in tensors.items()]

            verdict = check_parts(bound, inputs, grads, compare)
        except Refused as r:
            verdict = self._parts(grads, r.status, r.reason)
        except Exception as exc:
            verdict = self._parts(grads, OOM if is_oom(exc) else SKIPPED, "inputs/reference: " + exception_reason(exc))
        for part, (status, detail) in verdict.items():
            self.checks.append(CheckRecord(impl.name, small.head_dim, small.causal, small.max_seqlen, status,
                                           f"{small.label} [{part}] {detail}"))
        return verdict

    @staticmethod
    def _parts(grads: bool, status: str, detail: str) -> dict:
        return {part: (status, detail) for part in (("fwd", "bwd") if grads else ("fwd",))}

    def _check_inputs(self, small: FeatureCase, grads: bool):
        """(q, k, v, dout) of the reduced case in its layout, and the fp32 reference and `pt` (the
        same math in the input dtype) of out (and dq, dk, dv), packed (total, H, d)."""
        inputs = self._one_set(small, self._generator(small))
        packed = [_packed(t, small) for t in inputs]
        scale = small.head_dim ** -0.5
        ref, pt = (packed_reference(*packed, small.seqlens, scale, small.causal, small.window, grads, dtype)
                   for dtype in (torch.float32, inputs[0].dtype))
        return inputs, ref, pt

    def _one_set(self, case: FeatureCase, generator):
        """(q, k, v, dout) in the case's layout, standard normal in its dtype."""
        dtype = TORCH_DTYPES[case.dtype]
        if case.packed:
            return tuple(t[0] for t in random_inputs(1, case.tokens, case.tokens, case.heads, case.head_dim,
                                                     dtype, self.device, generator))
        return random_inputs(case.n_seqs, case.max_seqlen, case.max_seqlen, case.heads, case.head_dim, dtype,
                             self.device, generator)

    def _inputs(self, case: FeatureCase):
        """Enough input sets to exceed L2 several times over (timing.rotation_sets)."""
        elt = torch.tensor([], dtype=TORCH_DTYPES[case.dtype]).element_size()
        g = self._generator(case)
        return [self._one_set(case, g) for _ in range(rotation_sets(3 * case.elements * elt, self.l2_bytes))]

