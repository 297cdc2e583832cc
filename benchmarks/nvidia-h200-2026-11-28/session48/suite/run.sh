#!/usr/bin/env bash
# Session 48, last call: release-build GPU tests on the session's final kernels and host code (9573e82's
# tree) not yet run on it: hardening, transformers, training, property tests, stress, varlen, features,
# KV cache, and the GPU parts of the API and ops tests (round1 ran the debug build of the forward files,
# host/ the fast-path, forward and bench files).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c
timeout 470 python3 -m pytest -q -p no:cacheprovider -m gpu -rf tests/test_hardening_gpu.py \
  tests/test_hf_transformers.py tests/test_training_gpu.py tests/test_fwd_property_gpu.py \
  tests/test_features_property_gpu.py tests/test_stress_gpu.py tests/test_varlen_gpu.py tests/test_features_gpu.py \
  tests/test_kvcache_gpu.py tests/test_api.py tests/test_ops.py > $OUT/suite.log 2>&1
echo "suite rc=$? $(tail -n 1 $OUT/suite.log)"; grep -E "^FAILED|^ERROR" $OUT/suite.log | head
