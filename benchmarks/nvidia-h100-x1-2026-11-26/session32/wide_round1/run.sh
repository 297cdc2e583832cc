#!/usr/bin/env bash
# Session 32, wide_round1: the D = 256 (wide) backward consumer's LSE loads, which sit between the Q
# wait and the S^T wgmmas, so the dO wait after S^T queues behind them: wlse (_vq, LSE loads after the
# dP^T wgmmas) and wearly (_vr, dO waited for right after Q, then the LSE loads, then both wgmma
# groups) A/B vs HEAD ("."), 4 rounds, bwd d=256 1k/4k/16k both masks.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
OUT=$OUT AB_TREES="head=. wlse=_vq wearly=_vr" timeout 420 bash tools/ab_round.sh 4 --head-dim 256 --seqlen 1k,4k,16k --mode bwd
