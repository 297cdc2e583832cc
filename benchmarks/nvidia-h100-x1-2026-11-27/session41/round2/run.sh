#!/usr/bin/env bash
# Session 41 round 2: why the window rows' default backward (d=128) reads slower than the
# deterministic one (round1: 508 vs 550). base = HEAD, noclaim = _vy (dq_claims off: the preprocess
# zeroes the dQ accumulator and every tile is reduce-added, as before section 34). Modes det first.
# Window (4096, 0) and the plain causal mask at 16k, 3 rounds alternating trees, 200 ms soak.
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
AB_TREES="base=. noclaim=_vy" OUT=$OUT/window timeout 280 bash tools/ab_round.sh 3 --head-dim 64,128 --masks causal \
  --seqlen 16k --window 4096 --mode det,bwd --soak-ms 200 > $OUT/window.log 2>&1
AB_TREES="base=. noclaim=_vy" OUT=$OUT/causal timeout 200 bash tools/ab_round.sh 3 --head-dim 128 --masks causal \
  --seqlen 4k,16k --mode det,bwd --soak-ms 200 > $OUT/causal.log 2>&1
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
