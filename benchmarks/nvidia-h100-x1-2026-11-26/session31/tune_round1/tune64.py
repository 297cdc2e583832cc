"""Session 31 tune_round1: tools/fwd_tune.py's interleaved sweep for d=64 causal at 1k/2k with 64-key
blocks among the candidates (the current short-sequence tile is 128 x 128, no pingpong); each
candidate checked for accuracy at odd shapes first, cuDNN timed in alternation."""
import sys

sys.path.insert(0, "tools")
import torch  # noqa: E402

import fwd_tune  # noqa: E402
from fa3lite.variants import FwdTile as T  # noqa: E402
from fwd_smoke import check  # noqa: E402

P = {"persistent": True}
tiles = [T(128, 128, 2, True, False, **P), T(128, 64, 2, True, False, **P), T(128, 64, 2, True, True, **P),
         T(192, 64, 2, True, False, **P), T(128, 64, 3, True, False, **P), T(192, 128, 2, True, False, **P)]
for c in tiles:
    fwd_tune.use(64, True, c)
    for shape in ((1, 333, 517, 2, 1), (3, 700, 1037, 16, 4), (2, 1500, 300, 16, 8)):
        assert check(*shape, 64, torch.bfloat16, True), c
for S in (1024, 2048):
    fwd_tune.interleaved(64, True, S, tiles)
