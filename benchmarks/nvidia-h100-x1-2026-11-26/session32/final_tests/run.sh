#!/usr/bin/env bash
# Session 32, final_tests (call 1 of the final pair): release-build GPU tests of every file on the
# final tree (the LSE loads' new place in both backward consumers, hopper.bwd.for_query_length,
# kvcache._Layout keeping its GroupedRows), a debug-build pass over the backward (bounded waits), the
# deterministic stress run, then FA4's first wheel part copied to /root/peers for call 2.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
timeout 400 python3 -m pytest -q -p no:cacheprovider tests/test_fastpath_gpu.py tests/test_training_gpu.py \
  tests/test_bwd_gpu.py tests/test_fwd_gpu.py tests/test_hardening_gpu.py tests/test_stress_gpu.py \
  tests/test_varlen_gpu.py tests/test_kvcache_gpu.py tests/test_features_gpu.py tests/test_features_property_gpu.py \
  tests/test_fwd_property_gpu.py > $OUT/tests_release.log 2>&1
echo "tests rc $?" >> $OUT/tests_release.log
tail -3 $OUT/tests_release.log
FA3LITE_DEBUG=1 timeout 100 python3 -m pytest -q -x -p no:cacheprovider tests/test_bwd_gpu.py \
  -k "64 or 256" > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
tail -2 $OUT/tests_debug.log
timeout 40 python3 tools/det_stress.py --head-dim 64,256 --runs 20 > $OUT/det_stress.log 2>&1; echo "det_stress rc $?"
tail -2 $OUT/det_stress.log
mkdir -p /root/peers && cp .peers/a/* /root/peers/ && echo "peers part a staged"
