#!/usr/bin/env bash
# Session 31, release_round1: the backward's ring stage in two halves (Q + lse_log2, dO + dPsum, each
# with its own empty barrier): the consumers release dO once dV completed (at the dQ wait) and Q
# after dK; the producer loads dO first from the second round on. A/B vs 150295d (_vp), 3 rounds,
# bwd and deterministic bwd at d=64/128/256; then debug-build backward tests and the deterministic
# stress run.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
OUT=$OUT AB_TREES="head=_vp after=." timeout 400 bash tools/ab_round.sh 3 --head-dim 64,128,256 --seqlen 1k,4k,16k --mode bwd,det
FA3LITE_DEBUG=1 timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/test_bwd_gpu.py \
  > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
tail -2 $OUT/tests_debug.log
timeout 40 python3 tools/det_stress.py --head-dim 64,128,256 --runs 10 > $OUT/det_stress.log 2>&1; echo "det_stress rc $?"
tail -6 $OUT/det_stress.log
