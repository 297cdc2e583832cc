"""Session 33, second look: today's d=64 causal short tile against the serial schedule without
pingpong at S=1k and 1.5k, soaked, 9 rounds (the first sweep: +3.1% at 1k, -1% at 2k)."""
import sys

sys.path.insert(0, "tools")
import fwd_tune  # noqa: E402
from fa3lite.variants import FwdTile as T  # noqa: E402

P = {"persistent": True}
tiles = [T(128, 128, 2, True, False, **P), T(128, 128, 2, False, False, **P)]
for S in (1024, 1536, 1024):
    fwd_tune.interleaved(64, True, S, tiles, rounds=9, soak_ms=200)
