#!/usr/bin/env bash
# Session 55, call 3 of 4 (carry .peers/p3): FA4's third part staged; release-build GPU tests of the
# files the backward changes reach (backward, training, varlen, features, stress, hardening).
set -u
bash tools/speed_round.sh peers_part
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c
timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu -rf tests/test_bwd_gpu.py tests/test_training_gpu.py \
  tests/test_varlen_gpu.py tests/test_features_gpu.py tests/test_stress_gpu.py tests/test_hardening_gpu.py \
  > $OUT/release_tests.log 2>&1
echo "release tests rc=$? $(tail -n 1 $OUT/release_tests.log)"; grep -E "^FAILED|^ERROR" $OUT/release_tests.log | head
