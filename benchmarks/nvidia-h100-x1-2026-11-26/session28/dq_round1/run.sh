#!/usr/bin/env bash
# Session 28, dq_round1: dQ added from the consumers' registers (kDqDirect) at D = 64/128, with a
# three-stage Q/dO ring (after) or two (_vs2), against HEAD f040444 (_vh). Correctness first (debug
# build: bounded waits, NaN poison), then the A/B.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
FA3LITE_DEBUG=1 timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/test_bwd_gpu.py -k "64 or 128 or 96" \
  > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
tail -3 $OUT/tests_debug.log
timeout 60 python3 tools/det_stress.py --head-dim 64,128 --seqlen 1024 --runs 5 > $OUT/det_stress.log 2>&1; echo "rc $?" >> $OUT/det_stress.log
tail -6 $OUT/det_stress.log
OUT=$OUT AB_TREES="head=_vh s2=_vs2 after=." timeout 330 bash tools/ab_round.sh 2 --head-dim 64,128 --seqlen 1k,4k,16k --mode bwd
