"""Why the bench's varlen forward rows read lower than a direct timing (RESULTS sections 22, 23):
the bench's packed batch (feature_cases.varlen_lengths) and its dense comparator, forward only, timed
four ways -- per-call CUDA events (as fa3lite.bench.timing.CudaTimer) or one event pair around
--reps calls; inputs requiring grad or not -- next to the host time of one call (calls issued back
to back, CudaTimer.host_time) and the GPU time of its kernels (torch.profiler).
    python3 tools/varlen_probe.py [--head-dim 64,128]
"""
import argparse
import torch

from fa3lite import flash_attn_func, flash_attn_varlen_func
from fa3lite.bench import timing
from fa3lite.bench.feature_cases import varlen_lengths
from fa3lite.bench.flops import band_flops

LENGTHS = varlen_lengths(16384)   # the bench's packed batch
WIDTH = 2048


def per_call(step, n, reps):
    return timing.Stats.of(timing.CudaTimer(5, reps).time(step, n)).median


def batched(step, n, reps):
    for i in range(n):
        step(i)
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for r in range(reps):
        step(r % n)
    b.record()
    b.synchronize()
    return a.elapsed_time(b) / reps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--head-dim", default="64,128")
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    cu = torch.tensor((0,) + LENGTHS, dtype=torch.int64).cumsum(0).to("cuda", torch.int32)
    total, longest = sum(LENGTHS), max(LENGTHS)
    dense_len = round(total / len(LENGTHS))
    for d in (int(x) for x in args.head_dim.split(",")):
        h = WIDTH // d
        for causal in (False, True):
            for kind in ("varlen", "dense"):
                shape = (total, h, d) if kind == "varlen" else (len(LENGTHS), dense_len, h, d)
                lengths = LENGTHS if kind == "varlen" else (dense_len,) * len(LENGTHS)
                n = timing.rotation_sets(3 * total * h * d * 2, timing.l2_bytes(0))
                for grad in (False, True):
                    sets = [[torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=grad)
                             for _ in range(3)] for _ in range(n)]
                    if kind == "varlen":
                        def step(i):
                            flash_attn_varlen_func(*sets[i], cu, cu, longest, longest, causal=causal)
                    else:
                        def step(i):
                            flash_attn_func(*sets[i], causal=causal)
                    flops = band_flops(lengths, h, d, causal, (-1, -1), "fwd")
                    a = per_call(step, n, args.reps)
                    b = batched(step, n, args.reps)
                    host_us, _ = timing.CudaTimer(5, args.reps).host_time(lambda: step(0), calls=20)
                    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                        step(0)
                        torch.cuda.synchronize()
                    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
                    gpu_us = sum(e.device_time for e in kernels)
                    print(f"d={d} {'causal' if causal else 'full'} {kind:6} grad={int(grad)} per-call "
                          f"{flops / a / 1e9:6.1f} TFLOP/s ({a * 1e3:6.1f} us)  batched {flops / b / 1e9:6.1f} "
                          f"({b * 1e3:6.1f} us)  host {host_us:6.1f} us  kernels {gpu_us:6.1f} us "
                          f"({len(kernels)})", flush=True)


if __name__ == "__main__":
    main()
