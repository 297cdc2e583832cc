#!/usr/bin/env bash
# Session 28, defer_round2: narrow D = 96/128 backward with dQ one visit late, four dS^T buffers and
# each warpgroup's dS^T half announced as soon as it is written (the warpgroups may drift up to about
# two visits apart), dQ added from registers; D = 64 unchanged. vs HEAD e92e987 (_vh2).
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
FA3LITE_DEBUG=1 timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/test_bwd_gpu.py tests/test_varlen_gpu.py -k "128 or 96" \
  > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
tail -3 $OUT/tests_debug.log
timeout 60 python3 tools/det_stress.py --head-dim 128 --seqlen 1024 --runs 5 > $OUT/det_stress.log 2>&1; echo "rc $?" >> $OUT/det_stress.log
tail -3 $OUT/det_stress.log
OUT=$OUT AB_TREES="head=_vh2 after=." timeout 240 bash tools/ab_round.sh 2 --head-dim 128 --seqlen 1k,4k,16k --mode bwd,det
