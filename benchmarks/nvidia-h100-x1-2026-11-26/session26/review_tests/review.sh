#!/bin/bash
# Review round: the forward plan and launch helpers after the review's mends; host probes still run.
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD:$PYTHONPATH
timeout 420 python3 -m pytest -q -p no:cacheprovider tests/test_fastpath_gpu.py tests/test_fwd_gpu.py tests/test_bwd_gpu.py \
  tests/test_kvcache_gpu.py tests/test_varlen_gpu.py > $OUT/tests.log 2>&1; echo "rc $?" >> $OUT/tests.log
cd tools && timeout 120 python3 host_ideal.py --out $OUT/host_ideal.json > $OUT/host_ideal.log 2>&1; echo "rc $?" >> $OUT/host_ideal.log
