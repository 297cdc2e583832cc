#!/bin/bash
# Host-time round 2 (issue 10): after the planned eager node; bench host table; GPU tests of the paths.
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export PYTHONPATH=$PWD:$PYTHONPATH
{
timeout 200 python3 tools/host_ideal.py --out $OUT/host_ideal.json
echo "===== host_split"
timeout 200 python3 tools/host_split.py --rounds 9
echo "===== bench host table"
timeout 300 python3 -m fa3lite.bench --mode fwd --head-dim 128 --causal false --seqlen 1k --impl fa3lite,cudnn \
  --no-compile-time --no-plots --no-features --no-odd-check --out $OUT/bench 2>&1 | tail -30
} > $OUT/host2.log 2>&1
timeout 420 python3 -m pytest -q -x tests/test_fastpath_gpu.py tests/test_training_gpu.py tests/test_bwd_gpu.py tests/test_callkey.py \
  > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log
rm -rf $OUT/bench/*.csv
