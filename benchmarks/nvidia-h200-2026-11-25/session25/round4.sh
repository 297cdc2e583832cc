#!/usr/bin/env bash
# Session 25, round 4: A/B of the branch-free mask (before = HEAD ae4787e.., after = working tree).
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpu.txt
AB_TREES="before=_vb after=." timeout 560 bash tools/ab_round.sh 2 --head-dim 64,128,256 --seqlen 1k,4k,16k --mode fwd,bwd
