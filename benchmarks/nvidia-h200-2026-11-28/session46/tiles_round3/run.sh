#!/usr/bin/env bash
# Session 46 tiles_round3: tiles_round2 read the d = 256 causal forward's 128 x 64 tile 3% above
# today's 128 x 80 at 2k keys (where FWD_TILES switches to 80) and even at 4k. Here the two at 2k,
# 8k and 16k (tools/fwd_tune.py --interleave, 5 rounds, 200 ms soak), twice.
set -u
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c
for i in 1 2; do
  timeout 150 python3 tools/fwd_tune.py 256 --interleave --causal --soak-ms=200 --seqlen=2048,8192,16384 \
    --tiles="128,64,2,1,1,1;128,80,2,1,1,1" > $OUT/d256_causal_$i.log 2>&1
  echo "d256 causal $i rc=$?"; grep TFLOP $OUT/d256_causal_$i.log
done
