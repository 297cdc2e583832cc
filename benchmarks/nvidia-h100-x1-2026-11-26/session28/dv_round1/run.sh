#!/usr/bin/env bash
# Session 28, dv_round1: D = 96/128 backward, dV's k-steps issued one by one as their exp2s finish
# (after) vs HEAD f040444 (head). Debug-build tests first, then the A/B.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
FA3LITE_DEBUG=1 timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/test_bwd_gpu.py -k "128 or 96" \
  > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
tail -2 $OUT/tests_debug.log
OUT=$OUT AB_TREES="head=_vh after=." timeout 360 bash tools/ab_round.sh 3 --head-dim 128 --seqlen 1k,4k,16k --mode bwd,det
