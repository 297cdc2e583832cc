#!/usr/bin/env bash
# Session 31, handoff_round1: the backward's dQ hand-off per consumer warpgroup (each warpgroup +
# the writer warp on barriers of their own; the writer reduces each warpgroup's half as soon as it
# is stored and hands it back as soon as it is read), A/B vs HEAD 5984039 (_vp), 3 rounds, bwd and
# deterministic bwd at d=64/128; then debug-build backward tests and the deterministic stress run.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
OUT=$OUT AB_TREES="head=_vp after=." timeout 330 bash tools/ab_round.sh 3 --head-dim 64,128 --seqlen 1k,4k,16k --mode bwd,det
FA3LITE_DEBUG=1 timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/test_bwd_gpu.py -k "not 256" \
  > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
tail -2 $OUT/tests_debug.log
timeout 60 python3 tools/det_stress.py --head-dim 64,128 --runs 20 > $OUT/det_stress.log 2>&1; echo "det_stress rc $?"
tail -4 $OUT/det_stress.log
