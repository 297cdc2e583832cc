"""Session 37: does the dense d=256 causal (7 x 2341, 8 heads) forward read 2x slow in one column
only (session 36 final2: fa3lite 256 TFLOP/s, fa3lite det 489, the same kernel)? Times the two
calls alternately, 8 rounds, as the bench does (CudaTimer, inputs requiring grad, rotated sets)."""
import statistics, sys, torch
import fa3lite
from fa3lite.bench.timing import CudaTimer

B, S, H, D = 7, 2341, 8, 256
gen = torch.Generator(device="cuda").manual_seed(0)
sets = [[torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16, generator=gen).requires_grad_()
         for _ in range(3)] for _ in range(8)]
timer = CudaTimer(warmup=5, reps=30, soak_s=0.2)
flop = 4 * B * H * S * S * D / 2
res = {False: [], True: []}
for r in range(8):
    for det in (False, True):
        def step(i, det=det):
            q, k, v = sets[i]
            fa3lite.flash_attn_func(q, k, v, causal=True, deterministic=det)
        ms = sorted(timer.time(step, len(sets)))
        med = statistics.median(ms)
        res[det].append(round(flop / med / 1e9))
        print(f"round {r} det {det}: median {med:.4f} ms p20 {ms[6]:.4f} p80 {ms[24]:.4f} -> {flop / med / 1e9:.0f} TFLOP/s", flush=True)
print("TFLOP/s per round: default", res[False], "det", res[True])
