#!/bin/bash
# Session 27, GPU tests on the final tree (release build): the dense forward paths the scheduler
# change touched (persistent and dynamic tiles), the fast path, hardening, training, kvcache, varlen.
cd "$(dirname "$0")/../../../.."
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export PYTHONPATH=$PWD:$PYTHONPATH
timeout 560 python3 -m pytest -q -p no:cacheprovider tests/test_fwd_gpu.py tests/test_fwd_property_gpu.py \
  tests/test_fastpath_gpu.py tests/test_hardening_gpu.py tests/test_training_gpu.py tests/test_kvcache_gpu.py \
  tests/test_varlen_gpu.py tests/test_features_property_gpu.py > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log
