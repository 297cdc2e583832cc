#!/usr/bin/env bash
# Session 46 tiles_round4: the final run on this H200 put the d = 128 forward furthest behind FA4 at
# full 16k (0.95) and causal 1k (0.90). FWD_TILES was swept on an H100; here tools/fwd_tune.py's
# d = 128 candidates (128 x 128 / 160 / 176, pingpong or not, persistent or not) on the H200
# (--interleave, 5 rounds, 200 ms soak, cuDNN beside): full at 4k / 16k, causal at 1k / 4k.
set -u
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c
timeout 240 python3 tools/fwd_tune.py 128 --interleave --full --soak-ms=200 --seqlen=4096,16384 > $OUT/d128_full.log 2>&1
echo "d128 full rc=$?"; grep TFLOP $OUT/d128_full.log
timeout 200 python3 tools/fwd_tune.py 128 --interleave --causal --soak-ms=200 --seqlen=1024,4096 > $OUT/d128_causal.log 2>&1
echo "d128 causal rc=$?"; grep TFLOP $OUT/d128_causal.log
