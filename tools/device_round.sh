#!/usr/bin/env bash
# One device round: debug smoke (bounded waits trap), GPU tests, sanitizer on a small grid, timings.
# Usage on the device machine: bash tools/device_round.sh [pytest paths...]; logs go to $OUT.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$OUT/device.txt"
FA3LITE_DEBUG=1 timeout 200 python3 tools/fwd_smoke.py > "$OUT/smoke_debug.log" 2>&1
tail -n 2 "$OUT/smoke_debug.log"
if [ $# -gt 0 ]; then
  timeout 400 python3 -m pytest -q -p no:cacheprovider "$@" > "$OUT/pytest.log" 2>&1
  tail -n 15 "$OUT/pytest.log"
fi
if [ -n "${SANITIZE:-}" ]; then
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 240 compute-sanitizer --tool memcheck --report-api-errors no --print-limit 10 \
    python3 tools/fwd_sanitize.py > "$OUT/memcheck.log" 2>&1; tail -n 4 "$OUT/memcheck.log"
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 240 compute-sanitizer --tool synccheck --report-api-errors no --print-limit 10 \
    python3 tools/fwd_sanitize.py > "$OUT/synccheck.log" 2>&1; tail -n 4 "$OUT/synccheck.log"
fi
timeout 120 python3 tools/fwd_smoke.py --bench-only > "$OUT/bench.log" 2>&1
cat "$OUT/bench.log"
