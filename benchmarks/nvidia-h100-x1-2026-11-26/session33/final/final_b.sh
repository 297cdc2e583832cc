#!/usr/bin/env bash
# Session 33 final, call 2 (call 1 copied .peers/a to /root/peers): FA4 4.0.0b36 installed; the bf16
# grid with FA4, the deterministic rows, the feature rows and the host table, every timed batch after
# the bench's new default 200 ms soak (--soak-ms). No kernel changed this session (source of
# session 32's final plus the bench's timer).
cd "$(dirname "$0")/../../../.."
source .peers/b/install.sh > $OUT/install.log 2>&1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
timeout 570 python3 -m fa3lite.bench --mode fwd,bwd --head-dim 64,128,256 --causal both --seqlen 1k,4k,16k \
  --deterministic --impl fa3lite,cudnn,fa4 --no-compile-time --no-plots --time-budget 500 --out $OUT/bf16 \
  > $OUT/bf16.log 2>&1
echo "bench rc $?" >> $OUT/bf16.log
tail -2 $OUT/bf16.log
