#!/usr/bin/env bash
# Session 34, call 2: dQ claims with the rotated walk for full masks (bwd_scheduler.cuh kRotatedClaims).
# Debug build (NaN-poisoned buffers, bounded waits) over the backward tests at D <= 128 and the varlen
# tests; racecheck and synccheck over tools/race_bwd.py; A/B of the full-mask backward on three trees
# (_vo: 4b42acd, before claims; _vp: 0ab8ab1, claims; .: rotated) and of the deterministic backward
# (_vo against .); release tests of the backward and training.
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
FA3LITE_DEBUG=1 timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/test_bwd_gpu.py tests/test_varlen_gpu.py \
  -k "not 256 and not 192 and not 4224" > "$OUT/debug_tests.log" 2>&1
echo "== debug rc=$? $(tail -n 1 "$OUT/debug_tests.log")"
for tool in racecheck synccheck; do
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 compute-sanitizer --tool "$tool" \
    --report-api-errors no python3 tools/race_bwd.py > "$OUT/race_${tool}.log" 2>&1
  echo "== race_bwd $tool rc=$? $(tail -n 1 "$OUT/race_${tool}.log")"
done
AB_TREES="before=_vo claims=_vp rotated=." OUT=$OUT/full bash tools/ab_round.sh 2 --mode bwd --head-dim 64,128 --seqlen 1k,4k,16k
AB_TREES="before=_vo rotated=." OUT=$OUT/det bash tools/ab_round.sh 2 --mode det --head-dim 64,128 --seqlen 1k,4k
timeout 80 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_bwd_gpu.py tests/test_training_gpu.py \
  -k "not 4224" > "$OUT/tests.log" 2>&1
echo "== tests rc=$? $(tail -n 1 "$OUT/tests.log")"
