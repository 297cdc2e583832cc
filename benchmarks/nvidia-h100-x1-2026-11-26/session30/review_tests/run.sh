#!/usr/bin/env bash
# Session 30, review_tests: after the review (the forward's and the backward's longest-first order
# share launch_order.cuh; comments reflowed): debug-build causal forward / backward / kvcache tests,
# synccheck over tools/fwd_sanitize.py.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
FA3LITE_DEBUG=1 timeout 300 python3 -m pytest -q -x -p no:cacheprovider tests/test_fwd_gpu.py tests/test_bwd_gpu.py \
  tests/test_kvcache_gpu.py -k "causal or persistent or kvcache or steps or split" > $OUT/tests_debug.log 2>&1
echo "rc $?" >> $OUT/tests_debug.log
tail -2 $OUT/tests_debug.log
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 120 compute-sanitizer --tool synccheck --report-api-errors no \
  python3 tools/fwd_sanitize.py > $OUT/san_synccheck.log 2>&1
echo "synccheck rc $?: $(tail -1 $OUT/san_synccheck.log)"
