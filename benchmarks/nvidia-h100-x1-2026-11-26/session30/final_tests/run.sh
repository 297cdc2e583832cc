#!/usr/bin/env bash
# Session 30, final_tests (call 1 of the final pair): release-build GPU tests of every file, tree of
# 57712fe (FwdParams, the forward's tile order, hand-off, Q buffers and epilogue changed this session:
# dense, varlen, kvcache, backward and training paths all run here), then FA4's first wheel part
# copied to /root/peers for call 2.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
timeout 480 python3 -m pytest -q -p no:cacheprovider tests/test_fastpath_gpu.py tests/test_training_gpu.py \
  tests/test_bwd_gpu.py tests/test_fwd_gpu.py tests/test_hardening_gpu.py tests/test_stress_gpu.py \
  tests/test_varlen_gpu.py tests/test_kvcache_gpu.py tests/test_features_gpu.py tests/test_features_property_gpu.py \
  tests/test_fwd_property_gpu.py > $OUT/tests_release.log 2>&1
echo "tests rc $?" >> $OUT/tests_release.log
tail -4 $OUT/tests_release.log
mkdir -p /root/peers && cp .peers/a/* /root/peers/ && echo "peers part a staged"
