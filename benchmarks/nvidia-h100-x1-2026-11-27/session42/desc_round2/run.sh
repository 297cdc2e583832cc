#!/usr/bin/env bash
# Session 42 desc_round2: desc_round1 read the backward 0.99-1.04 (d=64 mean 1.01, d=256 1.02) and the
# forward 0.96-1.05 (d=64 causal 0.96-0.99) of HEAD, one machine, 3 rounds. Again at D = 64, fwd and
# bwd, 4 rounds, to tell the d=64 causal forward's loss from noise.
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
AB_TREES="before=_vo after=." timeout 250 bash tools/ab_round.sh 4 --head-dim 64 --seqlen 1k,4k,16k \
  --mode fwd,bwd --soak-ms 200 > $OUT/round.log 2>&1
cat $OUT/ab_summary.txt
