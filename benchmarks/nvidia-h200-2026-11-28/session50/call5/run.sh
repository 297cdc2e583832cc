#!/usr/bin/env bash
# Session 50, call 5: the landed tree (d7e4bd6) beyond call 4's files.
#  1. Debug build (bounded mbarrier waits, NaN-poisoned outputs): varlen and feature tests at D = 192/256
#     (the kernels kDirectO now reaches).
#  2. Release: hardening, training, stress, fast path, transformers, the GPU parts of test_api/test_ops.
#  3. The hypothesis GPU tests (forward, features) as far as the time allows.
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 100 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_varlen_gpu.py tests/test_features_gpu.py -k "256 or 192" > $OUT/debug_tests.log 2>&1
echo "debug tests rc=$?"; tail -2 $OUT/debug_tests.log
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 170 python3 -m pytest -q -p no:cacheprovider -m gpu \
  tests/test_hardening_gpu.py tests/test_training_gpu.py tests/test_stress_gpu.py tests/test_fastpath_gpu.py \
  tests/test_hf_transformers.py tests/test_api.py tests/test_ops.py > $OUT/release_suite.log 2>&1
echo "release suite rc=$?"; tail -2 $OUT/release_suite.log
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 90 python3 -m pytest -q -p no:cacheprovider \
  tests/test_fwd_property_gpu.py tests/test_features_property_gpu.py > $OUT/property.log 2>&1
echo "property tests rc=$?"; tail -2 $OUT/property.log
