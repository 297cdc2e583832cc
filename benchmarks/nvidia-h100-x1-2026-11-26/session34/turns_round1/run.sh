#!/usr/bin/env bash
# Session 34, call 3: the first deterministic turn stores too (narrow layout), the rotated walk for
# every narrow full-mask call without turns (dK/dV-only included), the postprocess's visits pointer.
# Debug build (NaN-poisoned buffers, bounded waits) over the backward, varlen and feature tests at
# D <= 128; release GPU tests of the backward paths; racecheck, synccheck and memcheck over
# tools/race_bwd.py; A/B of the deterministic backward (_vo: 4b42acd, before this session).
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
FA3LITE_DEBUG=1 timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_bwd_gpu.py tests/test_varlen_gpu.py \
  tests/test_features_gpu.py -k "not 256 and not 192 and not 4224" > "$OUT/debug_tests.log" 2>&1
echo "== debug rc=$? $(tail -n 1 "$OUT/debug_tests.log")"
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_bwd_gpu.py tests/test_training_gpu.py \
  tests/test_varlen_gpu.py tests/test_features_gpu.py tests/test_fastpath_gpu.py > "$OUT/tests.log" 2>&1
echo "== tests rc=$? $(tail -n 1 "$OUT/tests.log")"
for tool in racecheck synccheck memcheck; do
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 45 compute-sanitizer --tool "$tool" \
    --report-api-errors no python3 tools/race_bwd.py > "$OUT/race_${tool}.log" 2>&1
  echo "== race_bwd $tool rc=$? $(tail -n 1 "$OUT/race_${tool}.log")"
done
AB_TREES="before=_vo after=." OUT=$OUT/det bash tools/ab_round.sh 2 --mode det --head-dim 64,128 --seqlen 1k,4k
mkdir -p /root/peers && cp .peers/a/* /root/peers/ && echo "== FA4 part a staged"
