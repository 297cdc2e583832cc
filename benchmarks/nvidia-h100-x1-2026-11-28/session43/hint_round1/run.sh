#!/usr/bin/env bash
# Session 43 hint_round1: mbarrier waits with a suspend-time hint (cuda_src/ptx/mbarrier.cuh
# try_wait_for, 10 ms). ncu_fa4 (session 42) counted 14.8 M try-waits and 20.9 M branches in our
# D = 64 backward vs FA4's 3.3 M / 5.1 M: our retry loop re-polls after each hardware time-out. With
# the hint ptxas emits TRYWAIT, then @!P0 NANOSLEEP.SYNCS 0x989680 and one more probe per retry.
# A/B, before = _vo (HEAD 10e1a03), after = this tree, 3 rounds, fwd and bwd, d 64/128/256, 200 ms soak.
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
AB_TREES="before=_vo after=." timeout 560 bash tools/ab_round.sh 3 --head-dim 64,128,256 --seqlen 1k,4k,16k \
  --mode fwd,bwd --soak-ms 200 > $OUT/round.log 2>&1
cat $OUT/ab_summary.txt
