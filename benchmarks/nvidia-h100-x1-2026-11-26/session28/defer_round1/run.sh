#!/usr/bin/env bash
# Session 28, defer_round1: narrow backward with dQ one visit late and added from registers (the two
# consumer warpgroups no longer meet at a barrier every query block) vs HEAD e92e987 (_vh2).
# Debug-build tests first (bounded waits, NaN poison), the determinism stress, then the A/B.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
FA3LITE_DEBUG=1 timeout 240 python3 -m pytest -q -x -p no:cacheprovider tests/test_bwd_gpu.py tests/test_varlen_gpu.py -k "64 or 128 or 96" \
  > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
tail -3 $OUT/tests_debug.log
timeout 90 python3 tools/det_stress.py --head-dim 64,128 --seqlen 1024 --runs 5 > $OUT/det_stress.log 2>&1; echo "rc $?" >> $OUT/det_stress.log
tail -5 $OUT/det_stress.log
OUT=$OUT AB_TREES="head=_vh2 after=." timeout 300 bash tools/ab_round.sh 2 --head-dim 64,128 --seqlen 1k,4k,16k --mode bwd,det
