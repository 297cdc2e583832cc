"""How many CTAs share one query tile's keys (split-KV) when the caller leaves it to us (num_splits=0).

A decode step has few query tiles (batch * heads, one 64-row tile each) and long keys; with one CTA
per tile most SMs idle while a few stream the whole cache. Splitting each tile's key blocks over s
CTAs (the forward's split variant, then combine.py) fills the machine; each extra split costs one
more partial O and LSE to write and merge.

Rule (the split kernel runs one CTA per SM: its shared memory is most of one SM's):
  - tiles >= FILL * SMs: no split (the machine is already full);
  - else s = SMs // tiles (one wave), at most MAX_SPLITS and at most key_blocks / MIN_BLOCKS;
  - short keys (at most SHORT_KEY_BLOCKS blocks): s = (SMs / 2) // tiles, at least 1: half the SMs
    already read such a step about as fast as all of them, and each split adds to the combine.
Measured with tools/decode_probe.py sweep (benchmarks/RESULTS.md sections 21 and 37).
"""
from __future__ import annotations

FILL = 0.8           # tiles per SM from which splitting cannot add parallelism worth its combine
MAX_SPLITS = 128     # also bounds the accumulators: num_splits * total_q * Hq * Dv f32
# Key blocks per split. One suffices: with the combine a dependent launch (~0.6 us a step), B=1 at 1k
# keys (8 blocks, 8 tiles) ran 7.8 us in 4 splits of 2 blocks and 7.2 us in 8 splits of one (section 37).
MIN_BLOCKS = 1
# Keys this short (2k at 128-key blocks) take CTAs for half the SMs at most: at 1k-2k keys B=4 ran
# 12.2 / 12.6 us in 2 / 4 splits, B=8 17.4 / 18.3 and 28.8 / 29.8 in 1 / 2, while B=1 and 2 gained
# nothing past 64 CTAs; from 4k keys the whole machine pays or ties (section 37).
SHORT_KEY_BLOCKS = 16


def num_splits(tiles: int, key_blocks: int, sms: int) -> int:
    """Splits for `tiles` query tiles whose longest sequence has `key_blocks` key blocks on `sms` SMs."""
    if tiles <= 0 or tiles >= FILL * sms:
        return 1
    ctas = sms // 2 if key_blocks <= SHORT_KEY_BLOCKS else sms
    return max(1, min(ctas // tiles, MAX_SPLITS, key_blocks // MIN_BLOCKS))
