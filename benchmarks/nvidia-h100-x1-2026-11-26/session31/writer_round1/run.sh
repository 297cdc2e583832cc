#!/usr/bin/env bash
# Session 31, writer_round1: the dQ writer hands each warpgroup's part back as soon as that part was
# read (reduce, wait for its read, arrive; then the next part), instead of after both parts were
# issued (_ve), A/B vs HEAD (.), 3 rounds, bwd at d=64/128.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
OUT=$OUT AB_TREES="head=. perpart=_ve" timeout 300 bash tools/ab_round.sh 3 --head-dim 64,128 --seqlen 1k,4k,16k --mode bwd
