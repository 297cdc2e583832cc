#!/usr/bin/env bash
# Session 35, call 3: wide claims redone -- the keeper takes the ticket when its warpgroup starts a
# query block and ticket 0 zeroes the block's part of the accumulator (consumers always add, as
# before; wide_round1's version made the consumers wait for the ticket: -1..-4% at full masks);
# deterministic: turn 0 stores (unchanged since wide_round1). Debug build (NaN-poisoned buffers,
# bounded waits) over the wide backward tests; racecheck + synccheck + memcheck over race_bwd.py;
# A/B of the wide backward vs _vo (5211148: the preprocess zeroes the accumulator).
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
done
AB_TREES="before=_vo after=." OUT=$OUT bash tools/ab_round.sh 3 --mode bwd,det --head-dim 256 --seqlen 1k,4k,16k
