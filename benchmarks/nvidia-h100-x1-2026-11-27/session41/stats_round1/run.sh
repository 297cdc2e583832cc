#!/usr/bin/env bash
# Session 41 stats_round1: D = 64 backward (128-query steps) with the row statistics spread over the
# warp's quads (bwd_softmax.cuh SpreadStats: 2 + 2 LDS.64 a block per thread and shuffles, in place
# of 16 + 16 LDS.64; FA4's way at D <= 64). ncu_round1: our MIO-throttle stalls 1.07 vs FA4's 0.68,
# LDS 33.8 M vs 4.2 M. First the debug build's D = 64 backward and varlen tests (bounded waits,
# NaN-poisoned buffers), then A/B: before = _vo (HEAD), after = this tree, 3 rounds.
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 300 python3 -m pytest -q -x tests/test_bwd_gpu.py \
  tests/test_varlen_gpu.py -k "64 and not 256" > $OUT/debug_tests.log 2>&1
echo "== debug tests rc=$?"; tail -2 $OUT/debug_tests.log
AB_TREES="before=_vo after=." timeout 280 bash tools/ab_round.sh 3 --head-dim 64 --seqlen 1k,4k,16k \
  --mode bwd,det --soak-ms 200 > $OUT/round.log 2>&1
cat $OUT/ab_summary.txt
