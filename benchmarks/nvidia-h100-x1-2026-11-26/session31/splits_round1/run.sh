#!/usr/bin/env bash
# Session 31, splits_round1: D = 64 (128-query steps) takes S^T in two 64-query halves, each its own
# wgmma group, so the first half's exp2s run while the second half's S^T and dP^T are on the tensor
# pipe (the wait for the second half in both arms of an always-true branch, so ptxas keeps the
# exp2s above it). A/B vs HEAD (_vp, the commit before), 3 rounds, bwd and deterministic bwd at d=64; then
# debug-build D = 64 backward/training/varlen tests and the deterministic stress run.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
OUT=$OUT AB_TREES="head=_vp after=." timeout 300 bash tools/ab_round.sh 3 --head-dim 64 --seqlen 1k,2k,4k,16k --mode bwd,det
FA3LITE_DEBUG=1 timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/test_bwd_gpu.py tests/test_training_gpu.py \
  tests/test_varlen_gpu.py -k "64" > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
tail -2 $OUT/tests_debug.log
timeout 40 python3 tools/det_stress.py --head-dim 64 --runs 20 > $OUT/det_stress.log 2>&1; echo "det_stress rc $?"
tail -2 $OUT/det_stress.log
