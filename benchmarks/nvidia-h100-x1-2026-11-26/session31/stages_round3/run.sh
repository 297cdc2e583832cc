#!/usr/bin/env bash
# Session 31, stages_round3: D = 128 (64-query steps, dQ split by columns) with a third Q/dO stage in
# place of the second dQ buffer (one buffer and one writer warp), A/B vs 82c94b5 (_vp), 3 rounds, bwd
# and deterministic bwd at d=128; then debug-build D = 96/128 backward tests and the deterministic
# stress run.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
OUT=$OUT AB_TREES="head=_vp after=." timeout 300 bash tools/ab_round.sh 3 --head-dim 128 --seqlen 1k,4k,16k --mode bwd,det
FA3LITE_DEBUG=1 timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/test_bwd_gpu.py -k "128 or 96" \
  > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
tail -2 $OUT/tests_debug.log
timeout 40 python3 tools/det_stress.py --head-dim 128 --runs 20 > $OUT/det_stress.log 2>&1; echo "det_stress rc $?"
tail -2 $OUT/det_stress.log
