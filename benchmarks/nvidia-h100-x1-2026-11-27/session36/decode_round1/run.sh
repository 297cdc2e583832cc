#!/usr/bin/env bash
# Session 36, call: the decode step's host path after the append kernel writes seqused_k (no torch add),
# planned calls hand over the caches without view ops, kvcache_key spelled out. Release and debug
# kvcache GPU tests; then the host time per decode step, before (_vh = HEAD's kernels and host code) and
# after, alternating processes (tools/decode_probe.py host: B=1 1k without and with an appended row,
# B=8 8k).
set -u
OUT=${OUT:-/tmp/out}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 200 python3 -m pytest -q -p no:cacheprovider -rf --tb=short \
  tests/test_kvcache_gpu.py > "$OUT/tests.log" 2>&1
echo "== release kvcache rc=$? $(tail -n 1 "$OUT/tests.log")"
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3d FA3LITE_DEBUG=1 timeout 150 python3 -m pytest -q -p no:cacheprovider -rf \
  --tb=short tests/test_kvcache_gpu.py -k "append or repeat or graph" > "$OUT/debug.log" 2>&1
echo "== debug kvcache rc=$? $(tail -n 1 "$OUT/debug.log")"
for r in 1 2 3 4; do
  for tree in _vh .; do
    echo "## round $r tree $tree" >> "$OUT/host.log"
    (PYTHONPATH=$PWD/$tree FA3LITE_CACHE_DIR=/tmp/fa3c_$tree timeout 60 python3 tools/decode_probe.py host 2>&1 \
      | grep "us host") >> "$OUT/host.log"
  done
done
cat "$OUT/host.log"
