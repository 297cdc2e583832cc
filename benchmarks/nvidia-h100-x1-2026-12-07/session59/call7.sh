#!/usr/bin/env bash
# Session 59, call 7: the d = 128 full-mask forward's key block re-swept at 4k and 16k (the final run's
# furthest forward cell, 0.935 of FA4 at 16k), one CTA per tile as today from 8k keys; each candidate
# checked for accuracy first, timed beside cuDNN in alternation after a 200 ms soak.
export PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 200 python3 tools/fwd_tune.py 128 --full --interleave --soak-ms=200 --seqlen=4096,16384 \
  --tiles="128,128,2,1,1,0;128,176,2,1,1,0;128,160,2,1,1,0;128,192,2,1,1,0;128,144,2,1,1,0;128,112,3,1,1,0" \
  > $OUT/tune128.log 2>&1; echo "== tune rc=$?"; grep -v "^OK" $OUT/tune128.log | tail -20
