"""The GPU activities of one attention call beside its main kernel: how much of a call the side
kernels (the forward's tile-counter fill, the backward's preprocess and postprocess) and the gaps
between launches take. 16k tokens, width 2048 (H = 2048 / D), bf16, inputs requiring grad as in the
bench; the same inputs every call (not rotated past L2).

    python3 tools/call_timeline.py D S causal(0|1) [fwd|bwd]

bwd times the backward alone: torch.autograd.grad of one forward's out with a fixed dout. Two phases,
cold (right after warm-up) and soaked (after 200 ms of the same call): the CUDA-event time per call
over 50 back-to-back calls with its TFLOP/s (FLOPs 4 B H S^2 D, /2 causal, x2.5 bwd) and the SM
clock / power that nvidia-smi reads just after, then a torch.profiler window of 20 calls: each GPU
activity's count and mean duration. The profiler window runs after the nvidia-smi read (~0.1 s
idle), so its kernel times may be at other clocks than the timed calls (benchmarks/RESULTS.md
section 52)."""
import subprocess
import sys
import time

import torch

import fa3lite


def make_call(d: int, s: int, causal: bool, mode: str):
    """(call, FLOPs of one call) for the cell."""
    b, h = 16384 // s, 2048 // d
    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    flops = 4 * b * h * s * s * d / (2 if causal else 1)
    if mode == "bwd":
        out = fa3lite.flash_attn_func(q, k, v, causal=causal)
        dout = torch.randn_like(out)
        return (lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)), flops * 2.5
    return (lambda: fa3lite.flash_attn_func(q, k, v, causal=causal)), flops


def per_call_us(call, n: int) -> float:
    """Mean time of n back-to-back calls between two CUDA events, us."""
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(n):
        call()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) * 1e3 / n


def clock_and_power() -> str:
    return subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader"],
                          capture_output=True, text=True).stdout.strip()


def activities(call, n: int) -> list[tuple[str, int, float]]:
    """(name, count, mean us) of every GPU activity in a profiler window of n calls, longest first."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            call()
        torch.cuda.synchronize()
    rows: dict[str, list] = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            r = rows.setdefault(e.name[:70], [0, 0.0])
            r[0] += 1
            r[1] += e.device_time
    return sorted(((name, n, t / n) for name, (n, t) in rows.items()), key=lambda x: -x[1] * x[2])


def main():
    d, s, causal = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
    mode = sys.argv[4] if len(sys.argv) > 4 else "fwd"
    call, flops = make_call(d, s, causal, mode)
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    for phase in ("cold", "soaked"):
        if phase == "soaked":
            t0 = time.time()
            while time.time() - t0 < 0.2:
                call()
        us = per_call_us(call, 50)
        print(f"{phase}: {us:.1f} us a call, {flops / us / 1e6:.0f} TFLOP/s; clock/power {clock_and_power()}",
              flush=True)
        for name, n, mean in activities(call, 20):
            print(f"   {n:4d} x {mean:8.1f} us  {name}")


if __name__ == "__main__":
    main()
