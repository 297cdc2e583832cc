#!/usr/bin/env bash
# Session 33 final, call 3 (same warm machine, FA4 still in /tmp/site): the fp16 backward grid with
# the 200 ms soak.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:$PWD:$PYTHONPATH
timeout 400 python3 -m fa3lite.bench --mode bwd --head-dim 64,128,256 --causal both --seqlen 1k,4k,16k \
  --dtype fp16 --impl fa3lite,cudnn,fa4 --no-compile-time --no-plots --no-host-time --no-features \
  --time-budget 330 --out $OUT/fp16 > $OUT/fp16.log 2>&1
echo "fp16 bench rc $?" >> $OUT/fp16.log
tail -2 $OUT/fp16.log
