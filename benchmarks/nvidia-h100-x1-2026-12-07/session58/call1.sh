#!/usr/bin/env bash
# Session 58, call 1 (RESULTS section 58): the forward's exp2s partly on the FMA pipe (softmax.cuh
# ex2_fma, every k-th probability; config.cuh kExp2Emu), on top of session 57's row max in four chains.
# Trees (git-ignored copies, made on the CPU side): _ve0 / _ve8 / _ve2 = this tree with EXP2_EMU
# {64: k, 128: k}; "." has k = 4.
# One call, carry ["_ve0", "_ve8", "_ve2"]:
#   1. debug build (bounded waits, NaN-poisoned outputs): every forward test, on "." (k = 4)
#   2. A/B k = 0 / 8 / 4 / 2, forward, d 64 and 128, full and causal, 1k / 4k / 16k, 2 rounds
set -u
export PYTHONUNBUFFERED=1
ROOT=$OUT
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
OUT=$ROOT/debug DEBUG_LIMIT=170 DEBUG_TESTS=tests/test_fwd_gpu.py DEBUG_K="" bash tools/speed_round.sh debug
OUT=$ROOT/ab AB_TREES="e0=_ve0 e8=_ve8 e4=. e2=_ve2" timeout 400 bash tools/ab_round.sh 2 --mode fwd \
  --head-dim 64,128 --seqlen 1k,4k,16k --soak-ms 200 > $ROOT/ab.log 2>&1; echo "ab rc=$?"
cat $ROOT/ab/ab_summary.txt
cd $ROOT && tar -czf logs.tgz ab.log ab debug && rm -rf ab debug
