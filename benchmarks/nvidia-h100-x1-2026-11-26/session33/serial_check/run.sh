#!/usr/bin/env bash
# Session 33: d=64 causal below 2k keys on the serial schedule (variants.py): release GPU tests of the
# forward and varlen paths at d=64, the debug build (bounded waits) over the causal forward tests,
# racecheck and synccheck over tools/fwd_sanitize.py. Tight limits: the session's device time is short.
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
timeout 130 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fwd_gpu.py tests/test_varlen_gpu.py \
  tests/test_features_gpu.py -k "64" > "$OUT/tests.log" 2>&1; echo "== tests rc=$? $(tail -n 1 "$OUT/tests.log")"
FA3LITE_DEBUG=1 timeout 50 python3 -m pytest -q -x -p no:cacheprovider tests/test_fwd_gpu.py -k "64 and causal" \
  > "$OUT/debug.log" 2>&1; echo "== debug rc=$? $(tail -n 1 "$OUT/debug.log")"
for tool in racecheck synccheck; do
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 45 compute-sanitizer --tool $tool --report-api-errors no --print-limit 10 \
    python3 tools/fwd_sanitize.py > "$OUT/san_$tool.log" 2>&1; echo "== $tool rc=$? $(tail -n 2 "$OUT/san_$tool.log" | tr '\n' ' ')"
done
