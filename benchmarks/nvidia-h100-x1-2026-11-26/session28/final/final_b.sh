#!/bin/bash
# Session 28 final, call 2 (call 1 copied .peers/a to /root/peers), tree of e92e987 (dV k-steps with
# their exp2s at D = 96/128): FA4 4.0.0b36 installed; the bf16 grid with FA4, the deterministic rows,
# the feature rows and the host table; the release backward tests (the device time left allowed no
# more: 358 s).
cd "$(dirname "$0")/../../../.."
source .peers/b/install.sh > $OUT/install.log 2>&1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
timeout 235 python3 -m fa3lite.bench --mode fwd,bwd --head-dim 64,128,256 --causal both --seqlen 1k,4k,16k \
  --deterministic --impl fa3lite,cudnn,fa4 --no-compile-time --no-plots --time-budget 200 --out $OUT/bf16 \
  > $OUT/bf16.log 2>&1
echo "bench rc $?" >> $OUT/bf16.log
timeout 75 python3 -m pytest -q -p no:cacheprovider tests/test_bwd_gpu.py \
  > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log
tail -1 $OUT/bf16.log $OUT/tests.log
