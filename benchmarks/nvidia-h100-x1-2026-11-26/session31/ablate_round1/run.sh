#!/usr/bin/env bash
# Session 31, ablate_round1 (timing only: the ablated tree computes wrong dQ): after the per-warpgroup
# dQ hand-off (150295d, _vp), what the one remaining meeting of the two consumer warpgroups per
# query block costs: _va = 150295d without the kDsFull barrier. 3 rounds, bwd, d=64/128.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
OUT=$OUT AB_TREES="head=_vp nodsfull=_va" timeout 300 bash tools/ab_round.sh 3 --head-dim 64,128 --seqlen 1k,4k,16k --mode bwd
