#!/usr/bin/env bash
# Session 58, call 5 -- NOT RUN: the device refused the start (too little device time left). Prepared
# for the next session (RESULTS section 58): the code that landed (1652950: HEAD + the row max in four
# chains + the NaN-key test), checked as it is: debug forward tests (bounded waits, NaN-poisoned
# outputs), then the release kv-cache tests (the split-KV kernel's softmax; call 3 ran the varlen
# and feature tests on the same block_max); then a d = 64 tile sweep: two consumer
# warpgroups with 192- and 224-key blocks (compiled on the CPU: 0 spills, 149 / 165 KB of shared
# memory) against today's 192 x 128 and 128 x 128, interleaved with cuDNN (the per-block overhead of
# ~100 descriptor, barrier and branch instructions spread over more scores). No carry.
set -u
export PYTHONUNBUFFERED=1
ROOT=$OUT
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
OUT=$ROOT/debug DEBUG_LIMIT=170 DEBUG_TESTS=tests/test_fwd_gpu.py DEBUG_K="" bash tools/speed_round.sh debug
timeout 120 python3 -m pytest -q -x -p no:cacheprovider tests/test_kvcache_gpu.py \
  > $ROOT/kvcache_tests.log 2>&1; echo "== kvcache tests rc=$? $(tail -n 1 $ROOT/kvcache_tests.log)"
cp $ROOT/debug/debug_tests.log $ROOT/debug_tests.log
timeout 300 python3 tools/fwd_tune.py 64 --interleave --soak-ms=200 \
  --tiles="192,128,2,1,0,1;128,128,2,1,1,1;128,192,2,1,1,1;128,192,2,1,0,1;128,224,2,1,1,1" \
  > $ROOT/tune64.log 2>&1; echo "== tune rc=$?"; tail -n 40 $ROOT/tune64.log
