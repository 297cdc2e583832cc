#!/usr/bin/env bash
# Session 46 tiles_round2: forward tiles for the short causal cells (issue 8), tools/fwd_tune.py
# --interleave (candidates and cuDNN in alternation, 5 rounds, 200 ms soak), bf16, 16k tokens.
#  1. d = 256 causal: today's 128 x 64 (< 2k) and 128 x 80 (>= 2k) stage O in sQ, so a persistent CTA's
#     next Q waits for the epilogue's store (section 45's ncu: 14.5% of stall samples at 1k). Key
#     blocks of 48 or 32 leave room for O's own buffer (FwdVariant.separate_o): 128 x 48 x 2,
#     128 x 32 x 2, 128 x 32 x 3.
#  2. d = 256 full, 1k / 4k: the same candidates beside today's 128 x 80.
#  3. d = 64 causal 1k / 2k: today's 128 x 128 serial beside smaller key blocks (fewer keys past the
#     diagonal) and three stages.
set -u
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c
timeout 200 python3 tools/fwd_tune.py 256 --interleave --causal --soak-ms=200 --seqlen=1024,2048,4096 \
  --tiles="128,64,2,1,1,1;128,80,2,1,1,1;128,48,2,1,1,1;128,32,2,1,1,1;128,32,3,1,1,1" > $OUT/d256_causal.log 2>&1
echo "d256 causal rc=$?"; grep TFLOP $OUT/d256_causal.log
timeout 120 python3 tools/fwd_tune.py 256 --interleave --full --soak-ms=200 --seqlen=1024,4096 \
  --tiles="128,80,2,1,1,1;128,48,2,1,1,1;128,32,3,1,1,1" > $OUT/d256_full.log 2>&1
echo "d256 full rc=$?"; grep TFLOP $OUT/d256_full.log
timeout 150 python3 tools/fwd_tune.py 64 --interleave --causal --soak-ms=200 --seqlen=1024,2048 \
  --tiles="128,128,2,0,0,1;128,112,2,0,0,1;128,96,2,0,0,1;128,64,2,0,0,1;128,64,3,0,0,1;128,96,2,1,0,1" > $OUT/d64_causal.log 2>&1
echo "d64 causal rc=$?"; grep TFLOP $OUT/d64_causal.log
