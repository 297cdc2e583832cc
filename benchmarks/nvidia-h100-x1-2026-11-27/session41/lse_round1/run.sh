#!/usr/bin/env bash
# Session 41 lse_round1: D = 64 backward (128-query steps) with the LSE loads issued before the S^T
# wgmmas (after the Q wait) instead of after the dP^T wgmmas. ncu_round2 had 4.9% of the samples on
# the first FFMA waiting for those loads (short scoreboard). before = _vo (HEAD), after = this tree.
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
AB_TREES="before=_vo after=." timeout 560 bash tools/ab_round.sh 3 --head-dim 64 --seqlen 1k,4k,16k \
  --mode bwd,det --soak-ms 200 > $OUT/round.log 2>&1
