#!/usr/bin/env bash
# Session 31, final2_tests (call 1 of the second final pair): release-build GPU tests of every file on
# the final tree (the backward's per-warpgroup dQ hand-off, launch_slot, D = 64's three-stage ring), a
# debug-build pass over the causal forward and backward (bounded waits), then FA4's first wheel part
# copied to /root/peers for call 2.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
timeout 420 python3 -m pytest -q -p no:cacheprovider tests/test_fastpath_gpu.py tests/test_training_gpu.py \
  tests/test_bwd_gpu.py tests/test_fwd_gpu.py tests/test_hardening_gpu.py tests/test_stress_gpu.py \
  tests/test_varlen_gpu.py tests/test_kvcache_gpu.py tests/test_features_gpu.py tests/test_features_property_gpu.py \
  tests/test_fwd_property_gpu.py > $OUT/tests_release.log 2>&1
echo "tests rc $?" >> $OUT/tests_release.log
tail -3 $OUT/tests_release.log
FA3LITE_DEBUG=1 timeout 120 python3 -m pytest -q -x -p no:cacheprovider tests/test_fwd_gpu.py tests/test_bwd_gpu.py \
  -k "causal" > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
tail -2 $OUT/tests_debug.log
mkdir -p /root/peers && cp .peers/a/* /root/peers/ && echo "peers part a staged"
