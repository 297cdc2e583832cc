#!/usr/bin/env bash
# Session 42 desc_round1: wgmma descriptors stepped with one 64-bit add (cuda_src/ptx/wgmma.cuh
# desc_sw128_at over wgmma::opaque). ncu_fa4 set our D = 64 backward's instruction mix beside FA4's:
# 761 M vs 705 M warp instructions, of them UMOV 63.8 M vs 22.8 M and UIADD3 57.9 M vs 9.7 M (+ FA4's
# 34.6 M UIADD3.64): we re-paired each descriptor's halves for every wgmma. The D = 64 backward's main
# loop: 735 -> 688 SASS instructions (UMOV 58 -> 11, UIADD3 52 -> 12, UIADD3.64 0 -> 40). A/B,
# before = _vo (HEAD), after = this tree, 3 rounds, fwd and bwd, d 64/128/256, 200 ms soak.
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
AB_TREES="before=_vo after=." timeout 560 bash tools/ab_round.sh 3 --head-dim 64,128,256 --seqlen 1k,4k,16k \
  --mode fwd,bwd --soak-ms 200 > $OUT/round.log 2>&1
cat $OUT/ab_summary.txt
