#!/usr/bin/env bash
# Session 34: the claim ticket taken once the tile is ready (soak_round1's "late" tree, now the code):
# debug build (NaN-poisoned buffers, bounded waits) over the backward tests at D <= 128, racecheck
# and synccheck over tools/race_bwd.py.
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
FA3LITE_DEBUG=1 timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_bwd_gpu.py \
  -k "not 256 and not 192 and not 4224" > "$OUT/debug_tests.log" 2>&1
echo "== debug rc=$? $(tail -n 1 "$OUT/debug_tests.log")"
for tool in racecheck synccheck; do
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 45 compute-sanitizer --tool "$tool" \
    --report-api-errors no python3 tools/race_bwd.py > "$OUT/race_${tool}.log" 2>&1
  echo "== race_bwd $tool rc=$? $(tail -n 1 "$OUT/race_${tool}.log")"
done
