#!/bin/bash
# Final round, call 1: FA4's first wheel part copied; release-build GPU tests of the host paths.
cd "$(dirname "$0")/.."
mkdir -p /root/peers && cp .peers/a/* /root/peers/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export PYTHONPATH=$PWD:$PYTHONPATH
timeout 480 python3 -m pytest -q -p no:cacheprovider tests/test_fastpath_gpu.py tests/test_training_gpu.py \
  tests/test_bwd_gpu.py tests/test_fwd_gpu.py tests/test_hardening_gpu.py tests/test_stress_gpu.py \
  tests/test_varlen_gpu.py tests/test_kvcache_gpu.py > $OUT/tests_release.log 2>&1
echo "tests rc $?" >> $OUT/tests_release.log
