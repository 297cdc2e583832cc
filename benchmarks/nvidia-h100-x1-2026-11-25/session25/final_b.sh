#!/usr/bin/env bash
# Session 25 final, call 2 of 2: install FA4; the benchmark of record, bf16 (deterministic rows,
# feature rows, host table) and fp16, FA4 present, 3 interleaved rounds.
set -u
source .peers/b/install.sh > $OUT/install.log 2>&1
export PYTHONPATH=$PWD:$PYTHONPATH PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
timeout 330 python3 -m fa3lite.bench --mode fwd,bwd --head-dim 64,128,256 --causal both --seqlen 1k,4k,16k --deterministic --impl fa3lite,cudnn,fa4 --no-compile-time --no-plots --time-budget 300 --out $OUT/bf16 > $OUT/bf16.log 2>&1; echo "bf16 rc=$?"
timeout 200 python3 -m fa3lite.bench --mode fwd,bwd --head-dim 64,128,256 --causal both --seqlen 1k,4k,16k --impl fa3lite,cudnn,fa4 --dtype fp16 --no-compile-time --no-plots --no-host-time --no-features --time-budget 150 --out $OUT/fp16 > $OUT/fp16.log 2>&1; echo "fp16 rc=$?"
ls $OUT/bf16 $OUT/fp16
