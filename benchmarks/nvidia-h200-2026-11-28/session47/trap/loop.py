"""Session 47: repeat the window-skip test's launches (d 128, 16k x 16k, 8 heads, bf16) in the build
FA3LITE_DEBUG selects, syncing after each call so a trapped wait names its call. Run from a tree root."""
import sys
import time

import torch

import fa3lite

rounds = int(sys.argv[1])
g = torch.Generator(device="cuda").manual_seed(0)
q, k, v = (torch.randn(1, 16384, 8, 128, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
t0 = time.time()
for r in range(rounds):
    for window in ((256, 0), (-1, -1), (256, 256), (0, 256)):
        fa3lite.flash_attn_func(q, k, v, window_size=window, backend="fa3lite")
        torch.cuda.synchronize()
print(f"{rounds} rounds x 4 windows clean in {time.time() - t0:.1f} s", flush=True)
