"""Session 37 round7 (issue 8): d=64 causal below 2k keys runs the serial schedule (128 x 128, two
stages, no pingpong). The traces (round1) show both consumer warpgroups storing O and starting the next
tile together. Candidates that let them drift apart: pingpong on the serial schedule (the turns keep
an offset across tile boundaries), a third K/V stage (a warpgroup may run a block ahead), both.
Checked at odd shapes, then timed in alternation with cuDNN (tools/fwd_tune.py interleaved)."""
import sys

sys.path.insert(0, "tools")
import torch  # noqa: E402
from fa3lite.variants import FwdTile as T  # noqa: E402
from fwd_smoke import check  # noqa: E402
from fwd_tune import compiles, interleaved, use  # noqa: E402

P = {"persistent": True}
TILES = [T(128, 128, 2, False, False, **P),   # today's
         T(128, 128, 2, False, True, **P), T(128, 128, 3, False, False, **P), T(128, 128, 3, False, True, **P),
         T(128, 128, 3, True, False, **P)]
if "--compile-only" in sys.argv:
    for t in TILES:
        print(tuple(t), *compiles(64, t), flush=True)
    sys.exit(0)
good = [t for t in TILES if compiles(64, t)[0]]
for t in good:
    use(64, True, t)
    for shape in ((1, 333, 517, 2, 1), (3, 700, 1037, 16, 4), (2, 1500, 300, 16, 8), (2, 1024, 1024, 32, 32)):
        assert check(*shape, 64, torch.bfloat16, True), (t, shape)
for S in (1024, 2048, 1024):
    interleaved(64, True, S, good, rounds=7, soak_ms=100)
