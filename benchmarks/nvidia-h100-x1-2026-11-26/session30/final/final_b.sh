#!/usr/bin/env bash
# Session 30 final, call 2 (call 1, final_tests, copied .peers/a to /root/peers), tree of 57712fe:
# FA4 4.0.0b36 installed; the bf16 grid with FA4, the deterministic rows, the feature rows and the
# host table; then the decode grid (issue 13) with every implementation.
cd "$(dirname "$0")/../../../.."
source .peers/b/install.sh > $OUT/install.log 2>&1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
timeout 235 python3 -m fa3lite.bench --mode fwd,bwd --head-dim 64,128,256 --causal both --seqlen 1k,4k,16k \
  --deterministic --impl fa3lite,cudnn,fa4 --no-compile-time --no-plots --time-budget 200 --out $OUT/bf16 \
  > $OUT/bf16.log 2>&1
echo "bench rc $?" >> $OUT/bf16.log
timeout 300 python3 -m fa3lite.bench --decode --time-budget 250 --no-plots --out $OUT/decode > $OUT/decode.log 2>&1
echo "decode rc $?" >> $OUT/decode.log
tail -2 $OUT/bf16.log $OUT/decode.log
