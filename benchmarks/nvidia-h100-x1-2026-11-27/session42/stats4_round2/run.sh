#!/usr/bin/env bash
# Session 42 stats4_round2: round 1's layout had each lane's statistics contiguous over the whole
# block, so a warp's four 16-byte addresses were 128 bytes apart (same banks, 4-way conflicts: 0.83-0.91
# at D = 64). Now each 16 columns are four float4s, one per quad lane (bwd_stats.cuh): a warp reads
# 64 contiguous bytes. A/B at D = 64 and 128 first (before = _vo, HEAD; 3 rounds), then the debug
# build's backward, varlen and feature tests.
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
AB_TREES="before=_vo after=." timeout 280 bash tools/ab_round.sh 3 --head-dim 64,128 --seqlen 1k,4k,16k \
  --mode bwd,det --soak-ms 200 > $OUT/round.log 2>&1
cat $OUT/ab_summary.txt
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 290 python3 -m pytest -q -x -p no:cacheprovider \
  tests/test_bwd_gpu.py tests/test_varlen_gpu.py tests/test_features_gpu.py > $OUT/debug_tests.log 2>&1
echo "== debug tests rc=$?"; tail -2 $OUT/debug_tests.log
