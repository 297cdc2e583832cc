#!/usr/bin/env bash
# Session 55, call 6: call 5's racecheck flagged the tile slot (sm.sched) in the D = 64 varlen walks
# (reads by lanes 1-31 against the producer's next store, with one sched_empty arrival per warp after
# __syncwarp). Fix: every reading thread arrives. racecheck again (cap 2), then the debug build's
# varlen + feature tests and backward tests with 3 CTAs walking.
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD FA3LITE_BWD_MAX_CTAS=2 FA3LITE_CACHE_DIR=/tmp/fa3c PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 80 \
  compute-sanitizer --tool racecheck --report-api-errors no python3 tools/race_bwd.py > $OUT/san_bwd_racecheck.log 2>&1
echo "race_bwd racecheck rc=$? $(tail -n 1 $OUT/san_bwd_racecheck.log) ok=$(grep -c ': ok' $OUT/san_bwd_racecheck.log)"
PYTHONPATH=$PWD FA3LITE_BWD_MAX_CTAS=3 FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 165 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_varlen_gpu.py tests/test_features_gpu.py > $OUT/debug_features_cap3.log 2>&1
echo "debug varlen/feature tests, 3 CTAs rc=$?"; tail -n 1 $OUT/debug_features_cap3.log
PYTHONPATH=$PWD FA3LITE_BWD_MAX_CTAS=3 FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 95 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_bwd_gpu.py > $OUT/debug_bwd_cap3.log 2>&1
echo "debug bwd tests, 3 CTAs rc=$?"; tail -n 1 $OUT/debug_bwd_cap3.log
