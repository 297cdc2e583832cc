#!/usr/bin/env bash
# Session 49, call 4: D = 256 forward tiles again now that a persistent CTA stores O from registers
# (kDirectO, round2): persistent vs one CTA per tile for full masks at 4k-16k (FWD_TILES switches to
# one CTA per tile at 16k), and 64- vs 80-key blocks for causal masks at 1k/2k (64 below 2k).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c
timeout 200 python3 tools/fwd_tune.py 256 --full --interleave --soak-ms=200 --seqlen=4096,8192,16384 \
  '--tiles=128,80,2,1,1,1;128,80,2,1,1,0' > $OUT/full.log 2>&1; echo "full rc=$?"; grep -v "^\s*$" $OUT/full.log | tail -12
timeout 150 python3 tools/fwd_tune.py 256 --causal --interleave --soak-ms=200 --seqlen=1024,2048 \
  '--tiles=128,64,2,1,1,1;128,80,2,1,1,1' > $OUT/causal.log 2>&1; echo "causal rc=$?"; grep -v "^\s*$" $OUT/causal.log | tail -10
