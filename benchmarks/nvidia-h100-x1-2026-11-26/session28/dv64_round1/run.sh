#!/usr/bin/env bash
# Session 28, dv64_round1: D = 64 backward (128-query steps) with early dV, its k-steps issued as
# their exp2s finish, dS^T from P^T's packed fragments (after) vs HEAD e92e987 (_vh2). Debug-build
# tests first (bounded waits, NaN poison), then the A/B.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
FA3LITE_DEBUG=1 timeout 240 python3 -m pytest -q -x -p no:cacheprovider tests/test_bwd_gpu.py tests/test_varlen_gpu.py -k "64" \
  > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
tail -2 $OUT/tests_debug.log
timeout 60 python3 tools/det_stress.py --head-dim 64 --seqlen 1024 --runs 5 > $OUT/det_stress.log 2>&1; echo "rc $?" >> $OUT/det_stress.log
tail -3 $OUT/det_stress.log
OUT=$OUT AB_TREES="head=_vh2 after=." timeout 300 bash tools/ab_round.sh 3 --head-dim 64 --seqlen 1k,4k,16k --mode bwd,det
