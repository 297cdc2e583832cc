#!/usr/bin/env bash
# Session 61, call 2 (prepared; after call1.sh on the same set-up, see README.md): the backward with
# bwd_stats.diff (LSE / dPsum rows stored with each 16 queries permuted, bwd_stats.cuh, so that a
# consumer reads them as float4: 16 instead of 32 shared loads a block at D = 64) and
# bwd_ds_early.diff (128-query steps store dS^T before they issue dV, so the proxy fence behind the
# stores finds them done). Debug backward tests (bounded waits, NaN-poisoned outputs), then the
# release feature tests that read the rows otherwise (softcap loads them itself; the sink's
# gradient sums them) and the varlen GPU tests.
set -u
ROOT=$OUT
OUT=$ROOT/debug DEBUG_LIMIT=170 DEBUG_TESTS=tests/test_bwd_gpu.py DEBUG_K="" bash tools/speed_round.sh debug
export PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c
timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/test_features_gpu.py tests/test_varlen_gpu.py \
  tests/test_ptx.py > $ROOT/features_varlen.log 2>&1; echo "== features + varlen + ptx rc=$? $(tail -n 1 $ROOT/features_varlen.log)"
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --tool racecheck --report-api-errors no \
  python3 tools/race_bwd.py > $ROOT/racecheck.log 2>&1; echo "== racecheck rc=$?"; tail -n 2 $ROOT/racecheck.log
