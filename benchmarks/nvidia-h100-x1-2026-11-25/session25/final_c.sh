#!/usr/bin/env bash
# Session 25, after the final run: the 32-bit mask bounds (commit above the benchmarked one) in the
# debug build (bounded waits, NaN-poisoned outputs): backward, varlen and feature (window) tests.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpu.txt
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 280 python3 -m pytest -q -x tests/test_bwd_gpu.py tests/test_varlen_gpu.py tests/test_features_gpu.py > $OUT/dbg_tests.log 2>&1; echo "dbg rc=$?"; tail -n 2 $OUT/dbg_tests.log
