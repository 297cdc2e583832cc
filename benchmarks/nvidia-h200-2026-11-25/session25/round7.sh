#!/usr/bin/env bash
# Session 25, round 7: GPU tests of the branch-free backward mask and the causal launch order.
# Debug build (bounded waits, NaN-poisoned outputs) for the backward, varlen and training tests;
# release for the forward, KV-cache, hardening and fast-path tests.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpu.txt
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 300 python3 -m pytest -q -x tests/test_bwd_gpu.py tests/test_varlen_gpu.py tests/test_training_gpu.py > $OUT/dbg_tests.log 2>&1; echo "dbg rc=$?"; tail -n 3 $OUT/dbg_tests.log
FA3LITE_CACHE_DIR=/tmp/fa3c timeout 240 python3 -m pytest -q -x tests/test_kvcache_gpu.py tests/test_hardening_gpu.py tests/test_fastpath_gpu.py > $OUT/rel_tests.log 2>&1; echo "rel rc=$?"; tail -n 3 $OUT/rel_tests.log
