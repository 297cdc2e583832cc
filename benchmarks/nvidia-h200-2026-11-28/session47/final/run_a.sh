#!/usr/bin/env bash
# Session 47 final run, call 1 of 3 back to back on one warm H200 (carry .peers/p1): FA4's first part
# staged; the debug build (bounded waits, NaN-poisoned buffers) over the feature and KV-cache tests
# again (the trap of session47/ round 1 in test_window_skips_key_blocks, not seen since).
set -u
bash tools/speed_round.sh peers_part
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 200 python3 -m pytest -q -p no:cacheprovider \
  tests/test_features_gpu.py tests/test_kvcache_gpu.py > $OUT/debug_tests.log 2>&1
echo "debug tests rc=$?"; tail -2 $OUT/debug_tests.log
