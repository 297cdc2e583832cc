#!/usr/bin/env bash
# Session 42 pp_round1: fwd_tune read d=64 causal's 192x128 tile +1.1..2.0% with pingpong at 8k/16k
# (-1.3% at 2k). This tree: d=64 full and causal take pingpong from 8k keys (fa3lite/variants.py
# FWD_TILES). A/B with the bench's timing (tools/ab_time.py, 200 ms soak), before = _vo (HEAD), 3 rounds.
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
AB_TREES="before=_vo after=." timeout 300 bash tools/ab_round.sh 3 --head-dim 64 --seqlen 4k,8k,16k \
  --mode fwd --soak-ms 200 > $OUT/round.log 2>&1
cat $OUT/ab_summary.txt
