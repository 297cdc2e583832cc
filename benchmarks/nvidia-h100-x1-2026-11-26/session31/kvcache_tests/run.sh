#!/usr/bin/env bash
# Session 31, kvcache_tests: after the kvcache layout refactor (the layout keeps its GroupedRows),
# the release KV-cache GPU tests and the decode bench's tests.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_kvcache_gpu.py tests/test_fastpath_gpu.py \
  > $OUT/tests.log 2>&1; echo "rc $?" >> $OUT/tests.log
tail -2 $OUT/tests.log
