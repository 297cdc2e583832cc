#!/usr/bin/env bash
# Session 58, call 5 -- NOT RUN: the device refused the start (too little device time left). Prepared
# for the next session (RESULTS section 58): the code that landed (1652950: HEAD + the row max in four
# chains + the NaN-key test), checked as it is: debug forward tests (bounded waits, NaN-poisoned
# outputs), then the release kv-cache tests (the split-KV kernel's softmax; call 3 ran the varlen
# and feature tests on the same block_max). No carry.
set -u
export PYTHONUNBUFFERED=1
ROOT=$OUT
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
OUT=$ROOT/debug DEBUG_LIMIT=170 DEBUG_TESTS=tests/test_fwd_gpu.py DEBUG_K="" bash tools/speed_round.sh debug
timeout 120 python3 -m pytest -q -x -p no:cacheprovider tests/test_kvcache_gpu.py \
  > $ROOT/kvcache_tests.log 2>&1; echo "== kvcache tests rc=$? $(tail -n 1 $ROOT/kvcache_tests.log)"
cp $ROOT/debug/debug_tests.log $ROOT/debug_tests.log
