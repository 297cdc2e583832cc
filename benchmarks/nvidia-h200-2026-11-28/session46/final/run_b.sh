#!/usr/bin/env bash
# Session 46 final run, call 2 of 3 (carry .peers/p2): FA4's second part staged; on this tree (eda73b9)
# the debug-build (bounded waits, NaN-poisoned buffers) fast-path, training and plan tests, and
# compute-sanitizer racecheck over tools/race_bwd.py (every backward layout).
set -u
bash tools/speed_round.sh peers_part
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 200 python3 -m pytest -q -x -p no:cacheprovider \
  tests/test_fastpath_gpu.py tests/test_training_gpu.py tests/test_plans.py > $OUT/debug_tests.log 2>&1
echo "debug tests rc=$?"; tail -2 $OUT/debug_tests.log
FA3LITE_CACHE_DIR=/tmp/fa3c PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --tool racecheck \
  --report-api-errors no python3 tools/race_bwd.py > $OUT/race_racecheck.log 2>&1
echo "race_bwd racecheck rc=$? $(tail -n 1 $OUT/race_racecheck.log)"
