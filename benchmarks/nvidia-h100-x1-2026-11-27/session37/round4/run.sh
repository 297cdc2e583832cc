#!/usr/bin/env bash
# Session 37 round4 (issue 13): MIN_BLOCKS 1 with the pack-GQA test on one split count: release and
# debug-build (bounded waits, NaN-poisoned outputs) kv-cache GPU tests; the decode steps' timeline at
# B=1 beside SDPA.
cd "$(dirname "$0")/../../../.."
python3 -m pip install -q -e ".[test,bench]" > $OUT/install.log 2>&1
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
timeout 240 python3 -m pytest -q tests/test_kvcache_gpu.py tests/test_kvcache.py tests/test_fastpath_gpu.py \
  > $OUT/tests_release.log 2>&1; echo "rc $?" >> $OUT/tests_release.log
FA3LITE_DEBUG=1 timeout 300 python3 -m pytest -q tests/test_kvcache_gpu.py > $OUT/tests_debug.log 2>&1
echo "rc $?" >> $OUT/tests_debug.log
timeout 120 python3 tools/decode_probe.py timeline --shapes 1x1024,1x2048,1x8192 > $OUT/timeline.log 2>&1
echo "rc $?" >> $OUT/timeline.log
