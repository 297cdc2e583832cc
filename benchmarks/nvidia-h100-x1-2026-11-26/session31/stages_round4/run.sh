#!/usr/bin/env bash
# Session 31, stages_round4: D = 64 (128-query steps), 82c94b5's three Q/dO stages, one dS^T and one
# dQ buffer (head = .) against two stages, one dS^T buffer and two dQ buffers with a writer warp each
# (_vb), 3 rounds, bwd and deterministic bwd at d=64.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
OUT=$OUT AB_TREES="head=. twodq=_vb" timeout 300 bash tools/ab_round.sh 3 --head-dim 64 --seqlen 1k,2k,4k,16k --mode bwd,det
