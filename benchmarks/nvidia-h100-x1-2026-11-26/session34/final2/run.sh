#!/usr/bin/env bash
# Session 34 final 2 (after post_round1, which staged FA4's first wheel part): the bf16 grid with FA4,
# the deterministic rows, the feature rows and the host table; soaked batches, rotated rounds, 5
# rounds; then the fp16 backward.
cd "$(dirname "$0")/../../../.."
source .peers/b/install.sh > $OUT/install.log 2>&1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
timeout 440 python3 -m fa3lite.bench --mode fwd,bwd --head-dim 64,128,256 --causal both --seqlen 1k,4k,16k \
  --deterministic --impl fa3lite,cudnn,fa4 --rounds 5 --no-compile-time --no-plots --time-budget 400 --out $OUT/bf16 \
  > $OUT/bf16.log 2>&1
echo "bench rc $?" >> $OUT/bf16.log
tail -2 $OUT/bf16.log
timeout 130 python3 -m fa3lite.bench --mode bwd --head-dim 64,128,256 --causal both --seqlen 1k,4k,16k \
  --dtype fp16 --impl fa3lite,cudnn,fa4 --no-compile-time --no-plots --no-host-time --no-features \
  --time-budget 110 --out $OUT/fp16 > $OUT/fp16.log 2>&1
echo "fp16 bench rc $?" >> $OUT/fp16.log
tail -2 $OUT/fp16.log
