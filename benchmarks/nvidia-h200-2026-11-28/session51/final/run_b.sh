#!/usr/bin/env bash
# Session 51 final run, call 2 of 3 (carry .peers/p2): FA4's second part staged; release-build GPU
# tests, part 2.
set -u
bash tools/speed_round.sh peers_part
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c
timeout 190 python3 -m pytest -q -p no:cacheprovider -m gpu -rf tests/test_stress_gpu.py tests/test_varlen_gpu.py \
  tests/test_features_gpu.py tests/test_kvcache_gpu.py tests/test_api.py tests/test_ops.py > $OUT/suite_b.log 2>&1
echo "suite_b rc=$? $(tail -n 1 $OUT/suite_b.log)"; grep -E "^FAILED|^ERROR" $OUT/suite_b.log | head
