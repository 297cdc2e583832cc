#!/usr/bin/env bash
# Session 58, call 3 (RESULTS section 58): each row's softmax sum on the tensor core (softmax.cuh
# add_row_sums: one mma.sync m16n8k16 of P against ones per k16 step instead of a FADD per score;
# config.cuh kRowSumMma, on for d = 64 and 128 in "."), on top of session 57's row max in four chains.
# Trees (git-ignored copies): _vo = HEAD's cuda_src and fa3lite; _vt = HEAD + the row max in four chains.
# One call, carry ["_vo", "_vt"]:
#   1. debug build (bounded waits, NaN-poisoned outputs): every forward test, on "."
#   2. release build: the varlen and feature tests (the same softmax), as far as 170 s go
#   3. A/B before / tree / rsum, forward, d 64 and 128, full and causal, 1k / 4k / 16k, 3 rounds
set -u
export PYTHONUNBUFFERED=1
ROOT=$OUT
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
OUT=$ROOT/debug DEBUG_LIMIT=170 DEBUG_TESTS=tests/test_fwd_gpu.py DEBUG_K="" bash tools/speed_round.sh debug
timeout 170 python3 -m pytest -q -x -p no:cacheprovider tests/test_varlen_gpu.py tests/test_features_gpu.py \
  > $ROOT/features_tests.log 2>&1; echo "== features tests rc=$? $(tail -n 1 $ROOT/features_tests.log)"
OUT=$ROOT/ab AB_TREES="before=_vo tree=_vt rsum=." timeout 360 bash tools/ab_round.sh 3 --mode fwd \
  --head-dim 64,128 --seqlen 1k,4k,16k --soak-ms 200 > $ROOT/ab.log 2>&1; echo "ab rc=$?"
cat $ROOT/ab/ab_summary.txt
cd $ROOT && tar -czf logs.tgz ab.log ab debug features_tests.log && rm -rf ab debug
