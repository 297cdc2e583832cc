#!/usr/bin/env bash
# Session 50, call 4: the tree to land (varlen kDirectO, the kDirectO plan without an O map; the
# backward change of calls 2-3 reverted). Release GPU tests in full (calls 1 and 3 timed out part-way,
# no failure): varlen, the forward (all D = 256 cases, the persistent grid, the guard band), features,
# KV cache; then compute-sanitizer racecheck over tools/varlen_sanitize.py at D = 256 (as far as it gets).
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_after timeout 430 python3 -m pytest -q -p no:cacheprovider \
  tests/test_varlen_gpu.py tests/test_fwd_gpu.py tests/test_features_gpu.py tests/test_kvcache_gpu.py \
  > $OUT/release_tests.log 2>&1
echo "release tests rc=$?"; tail -3 $OUT/release_tests.log
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_after PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 compute-sanitizer \
  --tool racecheck --report-api-errors no python3 tools/varlen_sanitize.py --head-dims 256 --heads 2 \
  > $OUT/san_varlen_race.log 2>&1
echo "varlen_sanitize racecheck rc=$?"; cat $OUT/san_varlen_race.log | head -20
