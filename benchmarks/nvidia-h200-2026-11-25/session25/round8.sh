#!/usr/bin/env bash
# Session 25, round 8: (1) where the SDPA entry's training step spends host time (issue 10);
# (2) A/B of the mask bits made while the S / S^T wgmma runs (before = 819d546, after = tree), 3 rounds.
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpu.txt
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 200 python3 tools/host_autograd_profile.py --out $OUT/host_autograd.json > $OUT/host_autograd.log 2>&1
echo "host rc=$?"; head -30 $OUT/host_autograd.log
AB_TREES="before=_vb after=." timeout 350 bash tools/ab_round.sh 3 --head-dim 64,128,256 --seqlen 1k,4k --mode fwd,bwd
