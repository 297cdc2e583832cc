#!/usr/bin/env bash
# Session 31 final2, call 2 (call 1, final2_tests, copied .peers/a to /root/peers): FA4 4.0.0b36
# installed; the bf16 grid with FA4, the deterministic rows, the feature rows and the host table.
# No decode grid this time: no forward kernel changed since session 30's (launch_slot only).
cd "$(dirname "$0")/../../../.."
source .peers/b/install.sh > $OUT/install.log 2>&1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
timeout 260 python3 -m fa3lite.bench --mode fwd,bwd --head-dim 64,128,256 --causal both --seqlen 1k,4k,16k \
  --deterministic --impl fa3lite,cudnn,fa4 --no-compile-time --no-plots --time-budget 200 --out $OUT/bf16 \
  > $OUT/bf16.log 2>&1
echo "bench rc $?" >> $OUT/bf16.log
tail -2 $OUT/bf16.log
