#!/usr/bin/env bash
# Session 45 verify: the final tree (4e0c127: the shared layout's flash_attn strides now taken from
# the torch layout's) under the debug build (NaN-poisoned buffers, bounded waits): fast-path,
# training and backward GPU tests, -x.
set -u
export PYTHONPATH=$PWD
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 240 python3 -m pytest -q -x -p no:cacheprovider \
  tests/test_fastpath_gpu.py tests/test_training_gpu.py tests/test_plans.py tests/test_bwd_gpu.py > $OUT/debug_tests.log 2>&1
echo "debug tests rc=$?"; tail -3 $OUT/debug_tests.log
