#!/usr/bin/env bash
# Final GPU tests at HEAD: debug build (bounded waits, NaN-poisoned outputs) for the features and
# property tests, release build for the hardening, fast-path and the rest.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 330 python3 -m pytest -q tests/test_features_gpu.py tests/test_features_property_gpu.py tests/test_fwd_property_gpu.py > $OUT/dbg_tests.log 2>&1; echo "dbg rc=$?"; tail -n 2 $OUT/dbg_tests.log
FA3LITE_CACHE_DIR=/tmp/fa3c timeout 200 python3 -m pytest -q tests/test_hardening_gpu.py tests/test_fastpath_gpu.py tests/test_stress_gpu.py tests/test_training_gpu.py > $OUT/rel_tests.log 2>&1; echo "rel rc=$?"; tail -n 2 $OUT/rel_tests.log
