#!/usr/bin/env bash
# Session 42 stats4_round3: the lane-major statistics order (bwd_stats.cuh) only with 64-query steps
# (D = 128, 256): round 2 read +1% at D = 128 and 1-2% lost at D = 64, whose 128-query steps now
# keep query order and their SASS (42 LDS, as HEAD). A/B at D = 128 and 256 (before = _vo, HEAD;
# 3 rounds), then the debug build's backward, varlen and feature tests.
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
AB_TREES="before=_vo after=." timeout 300 bash tools/ab_round.sh 3 --head-dim 128,256 --seqlen 1k,4k,16k \
  --mode bwd,det --soak-ms 200 > $OUT/round.log 2>&1
cat $OUT/ab_summary.txt
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 270 python3 -m pytest -q -x -p no:cacheprovider \
  tests/test_bwd_gpu.py tests/test_varlen_gpu.py tests/test_features_gpu.py > $OUT/debug_tests.log 2>&1
echo "== debug tests rc=$?"; tail -2 $OUT/debug_tests.log
