#!/usr/bin/env bash
# Session 41 round 1: window rows (4k window at 16k, bf16, width 2048) default vs deterministic
# backward, and the backward's launch order for windows: base = HEAD, nolpt = _vx (lpt_heads 0
# when the band has a left edge). 3 rounds alternating trees, 200 ms soak per timed batch.
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
AB_TREES="base=. nolpt=_vx" timeout 520 bash tools/ab_round.sh 3 --head-dim 64,128,256 --masks causal \
  --seqlen 16k --window 4096 --mode fwd,bwd,det --soak-ms 200 > $OUT/round.log 2>&1
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
