#!/usr/bin/env bash
# Session 42 fwd_tune: the forward cells still short of the best peer in section 41's final run --
# d=64 causal 1k (0.95 of cuDNN) and 16k (0.96 of FA4; our causal/full ratio at d=64 is 0.93, FA4's
# 0.98), d=128 full 16k (0.96 of FA4) -- with every candidate tile of tools/fwd_tune.py, timed in
# alternation with cuDNN, 200 ms soak before each timed batch (5 rounds, medians).
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
timeout 280 python3 tools/fwd_tune.py 64 --causal --interleave --seqlen=1024,2048,8192,16384 --soak-ms=200 \
  > $OUT/d64_causal.log 2>&1
echo "== d64 causal rc=$?"; grep "d=64" $OUT/d64_causal.log
timeout 200 python3 tools/fwd_tune.py 128 --full --interleave --seqlen=4096,16384 --soak-ms=200 \
  > $OUT/d128_full.log 2>&1
echo "== d128 full rc=$?"; grep "d=128" $OUT/d128_full.log
