"""Timing on the GPU: CUDA events around each call, warm-up outside, inputs rotated past L2.

A step is a callable step(i) that runs one call on input set i. The timer warms up (covering every
input set, so compilation, autotuning and allocator growth stay out of the numbers), then times
`reps` calls, each between its own pair of events, and returns the per-call milliseconds.
A spin kernel is queued before the timed calls so the host gets ahead of the GPU: otherwise the
first calls would include the host's launch latency rather than the GPU's time.

Soak: under sustained load an H100 runs at its board power limit (700 W), where the SM clock falls
from ~1.98 GHz to a median of ~1.5-1.8 GHz (hunting down to 1.2-1.4) within ~100 ms, so a short
batch timed right after an idle spell (a peer's JIT compile) runs at boost clocks while one timed
right after a power-hungry peer starts throttled. With soak_s > 0 the step runs back to back for
that long after the warm-up, so every batch is timed in the power state the call itself sustains, as
in training (tools/clock_probe.py measures clock, power and energy per call; benchmarks/RESULTS.md
section 33).
"""
from __future__ import annotations

import contextlib
import math
import statistics
import time
from dataclasses import dataclass

import torch

from ..hopper.common import l2_bytes  # noqa: F401 -- the runners size input rotation by it

L2_MULTIPLE = 4  # the rotated input sets together exceed this many L2 caches
MIN_SETS = 2  # never the same inputs twice in a row
MAX_SETS = 16
SPIN_CYCLES = 4_000_000  # ~2 ms at Hopper clocks: time enough to queue the timed calls
SOAK_AHEAD = 8  # calls the host may queue ahead of the GPU while soaking


def rotation_sets(set_bytes: int, l2_bytes: int) -> int:
    """How many distinct input sets to rotate among so that together they exceed L2_MULTIPLE x L2."""
    if set_bytes <= 0:
        raise ValueError(f"set_bytes: expected a positive size, got {set_bytes}")
    needed = math.ceil(L2_MULTIPLE * l2_bytes / set_bytes)
    return max(MIN_SETS, min(MAX_SETS, needed))


@dataclass(frozen=True)
class Stats:
    """Milliseconds per call over the timed repetitions."""

    median: float
    p20: float
    p80: float
    reps: int

    @classmethod
    def of(cls, times_ms: list[float]) -> "Stats":
        if not times_ms:
            raise ValueError("times_ms: expected at least one timing")
        ordered = sorted(times_ms)
        return cls(
            median=statistics.median(ordered),
            p20=_quantile(ordered, 0.2),
            p80=_quantile(ordered, 0.8),
            reps=len(ordered),
        )


def _quantile(ordered: list[float], q: float) -> float:
    pos = q * (len(ordered) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def soak(step, n_sets: int, seconds: float) -> None:
    """Runs step(0), step(1), .. step(n_sets - 1), step(0), .. back to back for `seconds`, at most
    SOAK_AHEAD calls queued on the GPU (the module docstring says why)."""
    done, i = [], 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        step(i % n_sets)
        i += 1
        done.append(torch.cuda.Event())
        done[-1].record()
        if len(done) > SOAK_AHEAD:
            done.pop(0).synchronize()


class CudaTimer:
    """Times steps with CUDA events; host time of a call with the wall clock."""

    def __init__(self, warmup: int, reps: int, soak_s: float = 0.0):
        if reps < 1 or warmup < 0:
            raise ValueError(f"reps >= 1 and warmup >= 0 expected, got reps={reps}, warmup={warmup}")
        if soak_s < 0:
            raise ValueError(f"soak_s: expected seconds >= 0, got {soak_s}")
        self.warmup, self.reps, self.soak_s = warmup, reps, soak_s

    def time(self, step, n_sets: int, context=contextlib.nullcontext) -> list[float]:
        with context():
            for i in range(max(self.warmup, n_sets)):
                step(i % n_sets)
            soak(step, n_sets, self.soak_s)
            torch.cuda.synchronize()
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(self.reps)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(self.reps)]
            torch.cuda._sleep(SPIN_CYCLES)
            for r in range(self.reps):
                starts[r].record()
                step(r % n_sets)
                ends[r].record()
            torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in zip(starts, ends)]

    def time_graphed(self, step, n_sets: int, context=contextlib.nullcontext) -> list[float]:
        """Per-call milliseconds from CUDA-graph replays: step(0) .. step(n_sets - 1) captured once (after
        the warm-up, outside the capture), the graph replayed `reps` times between events, each replay's
        time divided by n_sets. No host work between the calls: the GPU's time only, as a server that
        replays captured decode steps sees it. Raises what the capture raises (the caller times eagerly)."""
        with context():
            for i in range(max(self.warmup, n_sets)):
                step(i % n_sets)
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for i in range(n_sets):
                    step(i)
            graph.replay()
            torch.cuda.synchronize()
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(self.reps)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(self.reps)]
            for r in range(self.reps):
                starts[r].record()
                graph.replay()
                ends[r].record()
            torch.cuda.synchronize()
            del graph
        return [s.elapsed_time(e) / n_sets for s, e in zip(starts, ends)]

    def host_times(self, steps, calls: int = 100, rounds: int = 7):
        """host_time of several (call, context factory) steps, measured interleaved: each round times
        one batch of every step in turn, so a slow spell of the machine (CPU clocks, another process)
        hits all of them alike instead of whichever ran then. Returns [(host_us, wall_us)] medians."""
        host = [[] for _ in steps]
        wall = [[] for _ in steps]
        for call, context in steps:
            with context():
                for _ in range(max(self.warmup, 3)):
                    call()
        for _ in range(rounds):
            for i, (call, context) in enumerate(steps):
                with context():
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    for _ in range(calls):
                        call()
                    t1 = time.perf_counter()
                    torch.cuda.synchronize()
                    t2 = time.perf_counter()
                host[i].append((t1 - t0) / calls * 1e6)
                wall[i].append((t2 - t0) / calls * 1e6)
        return [(statistics.median(h), statistics.median(w)) for h, w in zip(host, wall)]

    def host_time(self, call, calls: int = 100, batches: int = 5, context=contextlib.nullcontext):
        """Median host microseconds to issue one call, calls issued back to back without syncing.

        Returns (host_us, wall_us): wall_us also waits for the GPU to finish the batch.
        """
        return self.host_times([(call, context)], calls, batches)[0]
