"""SM clock and board power while one attention call runs back to back (issues 8, 9).

ncu (--clock-control none) times one launch on an idle GPU; the bench times calls in a sustained
loop, where the board's power limit may lower the SM clock. This probe runs each implementation's
call in a loop for a fixed time, samples the SM clock, power and clock-event reasons through NVML
(cuda.bindings.nvml) on a thread, and reads the energy counter around the loop, so two kernels that
do the same work can be compared by clock and energy per call, not only by time.

Usage (device): python3 tools/clock_probe.py --cases "fwd 64 16384 0;bwd 128 4096 1" \
    --impl fa3lite,fa4,cudnn --seconds 3 --rounds 2
Case: mode (fwd|bwd) head_dim seqlen causal(0|1); 16k tokens a batch, width 2048, bf16, inputs
requiring grad (as the bench times training). bwd times the backward alone (the forward runs
outside the timed span of each step), but its energy per step and power include that forward.
"""
import argparse
import statistics
import threading
import time

import torch

from fa3lite.bench.impls import select_impls
from fa3lite.bench.flops import attention_flops

try:
    from cuda.bindings import nvml
except ImportError:  # older cuda-bindings: clocks are then not reported
    nvml = None

SAMPLE_S = 0.02   # sampler period: several samples per kernel at the sizes probed
TOKENS, WIDTH = 16384, 2048
WINDOWS_MS = (25, 50, 100, 200, 400, 800, 1600)   # upper edges of the transient's windows
# NVML_CLOCK_SM; its enum member's name differs between cuda-bindings releases, its value does not.
SM_CLOCK = nvml.ClockType(1) if nvml else None
THROTTLE = {4: "sw_power", 8: "hw_slowdown", 32: "sw_thermal", 64: "hw_thermal", 128: "power_brake",
            512: "board_limit"}


class Sampler(threading.Thread):
    """Samples (SM MHz, power W, event-reason bits) until stopped."""

    def __init__(self, handle):
        super().__init__(daemon=True)
        self.handle, self.samples, self._halt = handle, [], threading.Event()

    def run(self):
        while not self._halt.is_set():
            mhz = nvml.device_get_clock_info(self.handle, SM_CLOCK)
            watts = nvml.device_get_power_usage(self.handle) / 1000.0
            reasons = nvml.device_get_current_clocks_event_reasons(self.handle)
            self.samples.append((mhz, watts, reasons))
            time.sleep(SAMPLE_S)

    def stop(self):
        self._halt.set()
        self.join()


def _inputs(d, S, device):
    B, H = TOKENS // S, WIDTH // d
    return [torch.randn(B, S, H, d, device=device, dtype=torch.bfloat16, requires_grad=True) for _ in range(3)]


def _step(call, mode, q, k, v, grad):
    """One timed step: returns (start, end) events around the work timed."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if mode == "fwd":
        start.record()
        call(q, k, v)
        end.record()
    else:
        out = call(q, k, v)
        start.record()
        torch.autograd.grad(out, (q, k, v), grad)
        end.record()
    return start, end


def run_case(impl, mode, d, S, causal, seconds, handle):
    device = torch.device("cuda")
    call = impl.bind(causal, S, S, d ** -0.5, device).call
    q, k, v = _inputs(d, S, device)
    grad = torch.randn_like(q)
    for _ in range(3):
        _step(call, mode, q, k, v, grad)
    torch.cuda.synchronize()
    time.sleep(1.0)   # let the clock settle back to idle before the cold call
    s, e = _step(call, mode, q, k, v, grad)
    torch.cuda.synchronize()
    cold_ms = s.elapsed_time(e)
    sampler = Sampler(handle) if nvml else None
    energy0 = nvml.device_get_total_energy_consumption(handle) if nvml else 0
    if sampler:
        sampler.start()
    events, t0 = [], time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        events.append(_step(call, mode, q, k, v, grad))
        if len(events) % 16 == 0:
            events[-16][1].synchronize()   # keep the host at most ~16 steps ahead
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    energy = (nvml.device_get_total_energy_consumption(handle) - energy0) / 1000.0 if nvml else 0.0
    if sampler:
        sampler.stop()
    times = sorted(s.elapsed_time(e) for s, e in events[len(events) // 4:])
    med = statistics.median(times)
    # The loop's first second in windows (GPU time since its first step): how fast the power limit
    # brings the clock down after the idle second before it.
    first = events[0][0]
    windows = {w: [] for w in WINDOWS_MS}
    for s, e in events:
        at = first.elapsed_time(s)
        for w in WINDOWS_MS:
            if at < w:
                windows[w].append(s.elapsed_time(e))
                break
    transient = " ".join(f"<{w}:{statistics.median(v):.3f}" for w, v in windows.items() if v)
    flops = attention_flops(TOKENS // S, WIDTH // d, S, S, d, causal, mode)
    row = dict(impl=impl.name, mode=mode, d=d, S=S, causal=causal, cold_ms=cold_ms, med_ms=med,
               tflops=flops / med / 1e9, steps=len(events), joules_per_step=energy / len(events),
               watts=energy / wall, transient=transient)
    if sampler and sampler.samples:
        late = sampler.samples[len(sampler.samples) // 4:]
        row["mhz"] = statistics.median(m for m, _, _ in late)
        row["mhz_min"] = min(m for m, _, _ in late)
        bits = 0
        for _, _, r in late:
            bits |= int(r)
        row["reasons"] = ",".join(n for b, n in THROTTLE.items() if bits & b) or "-"
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", required=True, help='"mode d S causal;..."')
    p.add_argument("--impl", default="fa3lite,cudnn")
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--rounds", type=int, default=2)
    a = p.parse_args()
    handle = None
    if nvml:
        nvml.init_v2()
        handle = nvml.device_get_handle_by_index_v2(torch.cuda.current_device())
    impls = [i for i in select_impls(tuple(a.impl.split(","))) if i.probe() is None]
    print("impls:", ",".join(i.name for i in impls), "| nvml:", bool(nvml))
    hdr = f"{'case':22} {'impl':8} {'cold ms':>8} {'med ms':>8} {'TFLOP/s':>8} {'MHz':>6} {'min':>6} {'W':>5} {'J/step':>7}  reasons"
    for r in range(a.rounds):
        print(f"round {r}\n{hdr}")
        for c in a.cases.split(";"):
            mode, d, S, causal = c.split()
            for impl in impls:
                row = run_case(impl, mode, int(d), int(S), causal == "1", a.seconds, handle)
                print(f"{c:22} {impl.name:8} {row['cold_ms']:8.3f} {row['med_ms']:8.3f} {row['tflops']:8.1f} "
                      f"{row.get('mhz', 0):6.0f} {row.get('mhz_min', 0):6.0f} {row['watts']:5.0f} "
                      f"{row['joules_per_step']:7.3f}  {row.get('reasons', '?')}\n    ms per call by window: {row['transient']}",
                      flush=True)


if __name__ == "__main__":
    main()
