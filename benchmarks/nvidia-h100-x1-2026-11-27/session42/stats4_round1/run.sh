#!/usr/bin/env bash
# Session 42 stats4_round1: the backward's row statistics stored by the preprocess in the order the
# consumers read them (bwd_stats.cuh), so each thread loads them with 16-byte loads: D = 64 16 + 16
# LDS.64 per query block become 8 + 8 LDS.128 (SASS: 42 -> 26 LDS at D = 64, 26 -> 18 at 128,
# 18 -> 14 at 256). First the debug build's backward, varlen and feature tests (bounded waits,
# NaN-poisoned buffers), then A/B at D = 64: before = _vo (HEAD), after = this tree, 3 rounds.
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 290 python3 -m pytest -q -x -p no:cacheprovider \
  tests/test_bwd_gpu.py tests/test_varlen_gpu.py tests/test_features_gpu.py > $OUT/debug_tests.log 2>&1
echo "== debug tests rc=$?"; tail -2 $OUT/debug_tests.log
AB_TREES="before=_vo after=." timeout 280 bash tools/ab_round.sh 3 --head-dim 64 --seqlen 1k,4k,16k \
  --mode bwd,det --soak-ms 200 > $OUT/round.log 2>&1
cat $OUT/ab_summary.txt
