#!/usr/bin/env bash
# Session 51 final run, call 1 of 3 back to back on one warm H200 (carry .peers/p1): FA4's first part
# staged; release-build GPU tests on this tree (the forward's Q prefetched into L2), part 1.
set -u
bash tools/speed_round.sh peers_part
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c
timeout 190 python3 -m pytest -q -p no:cacheprovider -m gpu -rf tests/test_hardening_gpu.py \
  tests/test_hf_transformers.py tests/test_training_gpu.py tests/test_fwd_property_gpu.py \
  tests/test_features_property_gpu.py > $OUT/suite_a.log 2>&1
echo "suite_a rc=$? $(tail -n 1 $OUT/suite_a.log)"; grep -E "^FAILED|^ERROR" $OUT/suite_a.log | head
