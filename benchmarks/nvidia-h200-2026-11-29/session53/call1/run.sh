#!/usr/bin/env bash
# Session 53, call 1: the persistent backward (one CTA per SM without deterministic turns, each
# walking tiles blockIdx.x, + grid, ...). Debug build (bounded waits, NaN-poisoned outputs):
# 1. the backward tests as they are (small shapes: mostly one tile per CTA);
# 2. the same with FA3LITE_BWD_MAX_CTAS=3, so every call's CTAs walk many tiles (ring phases,
#    kv_full/kv_empty, the dQ buffers' drain, empty causal tiles between full ones);
# 3. varlen and feature tests (GQA walk, softcap, windows, padded dims, dQ-only / dK/dV-only) capped.
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 130 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_bwd_gpu.py > $OUT/debug_bwd.log 2>&1
echo "debug bwd tests rc=$?"; tail -2 $OUT/debug_bwd.log
PYTHONPATH=$PWD FA3LITE_BWD_MAX_CTAS=3 FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 150 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_bwd_gpu.py > $OUT/debug_bwd_cap3.log 2>&1
echo "debug bwd tests, 3 CTAs rc=$?"; tail -2 $OUT/debug_bwd_cap3.log
PYTHONPATH=$PWD FA3LITE_BWD_MAX_CTAS=3 FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 230 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_varlen_gpu.py tests/test_features_gpu.py > $OUT/debug_features_cap3.log 2>&1
echo "debug varlen/feature tests, 3 CTAs rc=$?"; tail -2 $OUT/debug_features_cap3.log
