#!/bin/bash
# GPU tests after the host-path changes (issue 10): debug build (bounded mbarrier waits, NaN-poisoned buffers).
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export PYTHONPATH=$PWD:$PYTHONPATH
FA3LITE_DEBUG=1 timeout 540 python3 -m pytest -q -p no:cacheprovider tests/test_fwd_gpu.py tests/test_fastpath_gpu.py \
  tests/test_training_gpu.py tests/test_bwd_gpu.py tests/test_hardening_gpu.py tests/test_varlen_gpu.py \
  tests/test_kvcache_gpu.py tests/test_features_gpu.py > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log
