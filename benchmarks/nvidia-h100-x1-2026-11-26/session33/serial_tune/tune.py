"""Session 33: d=64 causal forward at short S -- cuDNN's kernel waits for each QK^T in full and
overlaps warpgroups by pingpong (ncu_short/); our tile overlaps inside the warpgroup. Times the serial
schedule with and without pingpong beside today's tile, soaked, after fwd_tune's accuracy checks."""
import sys

sys.path.insert(0, "tools")
import torch  # noqa: E402

import fwd_tune  # noqa: E402
from fwd_smoke import check  # noqa: E402
from fa3lite.variants import FwdTile as T  # noqa: E402

P = {"persistent": True}
tiles = [T(128, 128, 2, True, False, **P), T(128, 128, 2, False, True, **P), T(128, 128, 2, False, False, **P),
         T(128, 128, 3, False, True, **P), T(192, 128, 2, False, True, **P), T(192, 128, 2, True, False, **P)]
good = []
for t in tiles:
    fwd_tune.use(64, True, t)
    ok = all(check(*shape, 64, torch.bfloat16, True)
             for shape in ((1, 333, 517, 2, 1), (2, 1, 239, 4, 2), (3, 700, 1037, 16, 4), (2, 1500, 300, 16, 8)))
    print(tuple(t), "accurate" if ok else "WRONG", flush=True)
    if ok:
        good.append(t)
for S in (1024, 2048, 4096):
    fwd_tune.interleaved(64, True, S, good, rounds=5, soak_ms=200)
