#!/usr/bin/env bash
# Session 25, round 5: forward mask A/B, 3 trees: before (HEAD), bwdfix (backward mask only), fwdmask
# (the forward's mask through frag::hide_outside too). 3 rounds.
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpu.txt
AB_TREES="before=_vb bwdfix=_vm fwdmask=." timeout 560 bash tools/ab_round.sh 3 --head-dim 64,128,256 --seqlen 1k,4k --mode fwd
