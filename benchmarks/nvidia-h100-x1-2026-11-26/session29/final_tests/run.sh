#!/usr/bin/env bash
# Session 29, final_tests: release-build GPU tests of every file, tree of 0c2e1a1 (FwdParams' layout
# changed this session: the dense forward, backward and training paths run here too).
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
timeout 500 python3 -m pytest -q -p no:cacheprovider tests/test_fastpath_gpu.py tests/test_training_gpu.py \
  tests/test_bwd_gpu.py tests/test_fwd_gpu.py tests/test_hardening_gpu.py tests/test_stress_gpu.py \
  tests/test_varlen_gpu.py tests/test_kvcache_gpu.py tests/test_features_gpu.py tests/test_features_property_gpu.py \
  tests/test_fwd_property_gpu.py > $OUT/tests_release.log 2>&1
echo "tests rc $?" >> $OUT/tests_release.log
tail -4 $OUT/tests_release.log
