"""How many CTAs share one query tile's keys (split-KV) when the caller leaves it to us (num_splits=0).

A decode step has few query tiles (batch * heads, one 64-row tile each) and long keys; with one CTA
per tile most SMs idle while a few stream the whole cache. Splitting each tile's key blocks over s
CTAs (the forward's split variant, then combine.py) fills the machine; each extra split costs one
more partial O and LSE to write and merge.

Rule (the split kernel runs one CTA per SM: its shared memory is most of one SM's):
  - tiles >= FILL * SMs: no split (the machine is already full);
  - else s = SMs // tiles (one wave), at most MAX_SPLITS and at most key_blocks / MIN_BLOCKS.
Measured with tools/decode_probe.py sweep (benchmarks/RESULTS.md sections 21 and 37).
"""
from __future__ import annotations

FILL = 0.8           # tiles per SM from which splitting cannot add parallelism worth its combine
MAX_SPLITS = 128     # also bounds the accumulators: num_splits * total_q * Hq * Dv f32
# Key blocks per split. One suffices: with the combine a dependent launch (~0.6 us a step), B=1 at 1k
# keys (8 blocks, 8 tiles) ran 7.8 us in 4 splits of 2 blocks and 7.2 us in 8 splits of one (section 37).
MIN_BLOCKS = 1


def num_splits(tiles: int, key_blocks: int, sms: int) -> int:
    """Splits for `tiles` query tiles whose longest sequence has `key_blocks` key blocks on `sms` SMs."""
    if tiles <= 0 or tiles >= FILL * sms:
        return 1
    return max(1, min(sms // tiles, MAX_SPLITS, key_blocks // MIN_BLOCKS))
