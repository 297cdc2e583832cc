#!/bin/bash
# Session 27, after final2's failure of test_dq_only_deterministic (96/128 full): the final tree's
# release backward tests, the debug-build deterministic and full-mask tests, det_stress at 1k, and a
# one-round A/B of the deterministic backward (full masks, 1k / 4k) against a1617fc (_vh).
cd "$(dirname "$0")/../../../.."
repo=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export PYTHONPATH=$repo PYTHONUNBUFFERED=1
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_bwd_gpu.py > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log
FA3LITE_DEBUG=1 timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_bwd_gpu.py tests/test_varlen_gpu.py \
  -k "determin or full" > $OUT/tests_debug.log 2>&1; echo "tests rc $?" >> $OUT/tests_debug.log
timeout 90 python3 tools/det_stress.py --seqlen 1024 --runs 10 > $OUT/det_stress.log 2>&1; echo "rc $?" >> $OUT/det_stress.log
OUT=$OUT AB_TREES="head=_vh after=." timeout 150 bash tools/ab_round.sh 1 --head-dim 64,128,256 --seqlen 1k,4k \
  --mode det > $OUT/ab_round.log 2>&1
