#!/usr/bin/env bash
# Session 32 final, call 2 (call 1, final_tests, copied .peers/a to /root/peers): FA4 4.0.0b36
# installed; the bf16 grid with FA4, the deterministic rows, the feature rows and the host table;
# then the fp16 backward grid.
# No decode grid: no forward kernel changed since session 30.
cd "$(dirname "$0")/../../../.."
source .peers/b/install.sh > $OUT/install.log 2>&1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
timeout 260 python3 -m fa3lite.bench --mode fwd,bwd --head-dim 64,128,256 --causal both --seqlen 1k,4k,16k \
  --deterministic --impl fa3lite,cudnn,fa4 --no-compile-time --no-plots --time-budget 200 --out $OUT/bf16 \
  > $OUT/bf16.log 2>&1
echo "bench rc $?" >> $OUT/bf16.log
tail -2 $OUT/bf16.log
# fp16 backward (the kernels changed since session 31's fp16 run are the backward's only).
timeout 170 python3 -m fa3lite.bench --mode bwd --head-dim 64,128,256 --causal both --seqlen 1k,4k,16k \
  --dtype fp16 --impl fa3lite,cudnn,fa4 --no-compile-time --no-plots --no-host-time --no-features \
  --time-budget 110 --out $OUT/fp16 > $OUT/fp16.log 2>&1
echo "fp16 bench rc $?" >> $OUT/fp16.log
tail -2 $OUT/fp16.log
