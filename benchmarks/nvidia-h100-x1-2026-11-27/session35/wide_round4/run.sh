#!/usr/bin/env bash
# Session 35, call 5: the consumers as before the session (wide_round3: any change to their dQ write path cost
# default calls ~3% at full masks); deterministic wide calls: the turn keeper zeroes its warpgroup's part
# of a query block at turn 0, so the preprocess no longer zeroes the accumulator for them. Debug build
# (NaN-poisoned buffers, bounded waits) over the wide backward tests; racecheck, synccheck and memcheck
# over race_bwd.py; A/B of the wide backward vs _vo (5211148); release backward, varlen, feature and
# training tests at D = 192 / 256.
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
FA3LITE_DEBUG=1 timeout 170 python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/test_bwd_gpu.py \
  -k "256 or 192" > "$OUT/debug_tests.log" 2>&1
echo "== debug rc=$? $(tail -n 1 "$OUT/debug_tests.log")"
for tool in racecheck synccheck memcheck; do
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 45 compute-sanitizer --tool "$tool" \
    --report-api-errors no python3 tools/race_bwd.py > "$OUT/race_${tool}.log" 2>&1
  echo "== race_bwd $tool rc=$? $(tail -n 1 "$OUT/race_${tool}.log")"
  cat "$OUT/race_${tool}.log" >> "$OUT/race.log" && rm "$OUT/race_${tool}.log"
done
AB_TREES="before=_vo after=." OUT=$OUT bash tools/ab_round.sh 3 --mode bwd,det --head-dim 256 --seqlen 1k,4k,16k
timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu -rf --tb=short tests/test_bwd_gpu.py \
  tests/test_varlen_gpu.py tests/test_features_gpu.py tests/test_training_gpu.py -k "256 or 192" > "$OUT/tests.log" 2>&1
echo "== tests rc=$? $(tail -n 1 "$OUT/tests.log")"
