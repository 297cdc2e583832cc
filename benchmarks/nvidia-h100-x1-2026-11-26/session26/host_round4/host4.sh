#!/bin/bash
# Host-time round 4 (issue 10): prepared launches; bench host table; GPU tests.
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export PYTHONPATH=$PWD:$PYTHONPATH
{
echo "===== host_ideal"
timeout 200 python3 tools/host_ideal.py --out $OUT/host_ideal.json
echo "===== host_split --split"
timeout 200 python3 tools/host_split.py --split --rounds 9
echo "===== bench host table"
timeout 300 python3 -m fa3lite.bench --mode fwd --head-dim 128 --causal false --seqlen 1k --impl fa3lite,cudnn \
  --no-compile-time --no-plots --no-features --no-odd-check --out $OUT/bench 2>&1 | tail -14
} > $OUT/host4.log 2>&1
FA3LITE_DEBUG=1 timeout 400 python3 -m pytest -q -x tests/test_fastpath_gpu.py tests/test_training_gpu.py tests/test_bwd_gpu.py \
  tests/test_fwd_gpu.py tests/test_hardening_gpu.py > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log
rm -f $OUT/bench/*.csv
