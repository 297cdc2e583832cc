#!/usr/bin/env bash
# Session 52, call 5: the tree that lands (HEAD: call 1's pingpong hand-off alone -- call 1's debug
# tests ran it with the Q parts -- and the copy_out change). Debug build (bounded waits, NaN-poisoned
# outputs): forward tests, varlen and feature tests; racecheck and synccheck over
# tools/fwd_sanitize.py; release: training, hardening and fast-path tests.
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 120 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_fwd_gpu.py > $OUT/debug_fwd.log 2>&1
echo "debug fwd tests rc=$?"; tail -1 $OUT/debug_fwd.log
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 200 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_varlen_gpu.py tests/test_features_gpu.py > $OUT/debug_features.log 2>&1
echo "debug varlen/feature tests rc=$?"; tail -1 $OUT/debug_features.log
for tool in racecheck synccheck; do
  PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 70 compute-sanitizer \
    --tool $tool --report-api-errors no python3 tools/fwd_sanitize.py > $OUT/san_fwd_$tool.log 2>&1
  echo "fwd_sanitize $tool rc=$? $(tail -n 1 $OUT/san_fwd_$tool.log)"
done
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 150 python3 -m pytest -q -p no:cacheprovider \
  tests/test_training_gpu.py tests/test_hardening_gpu.py tests/test_fastpath_gpu.py > $OUT/release_tests.log 2>&1
echo "release training/hardening/fastpath tests rc=$?"; tail -1 $OUT/release_tests.log
