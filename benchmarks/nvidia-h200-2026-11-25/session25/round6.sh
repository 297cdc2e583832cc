#!/usr/bin/env bash
# Session 25, round 6: backward A/B, 3 trees: before (HEAD), mask (branch-free mask only), lpt (mask
# + causal launch order longest first in L2-sized head groups). 3 rounds, default and deterministic.
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpu.txt
AB_TREES="before=_vb mask=_vm lpt=." timeout 580 bash tools/ab_round.sh 3 --head-dim 64,128,256 --seqlen 1k,4k,16k --mode bwd,det
