#!/usr/bin/env bash
# Session 35, call 1 (tree of 5211148, no kernel change): the GPU test files sessions 33-34 did not
# run -- forward and feature property tests (hypothesis vs the Numba oracle), hardening, forward,
# kv-cache -- release build; then the hypothesis stress run, 2,000 calls in 4 processes.
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu -rf --tb=short --durations=10 \
  tests/test_fwd_property_gpu.py tests/test_features_property_gpu.py tests/test_hardening_gpu.py \
  tests/test_fwd_gpu.py tests/test_kvcache_gpu.py > "$OUT/tests.log" 2>&1
echo "== tests rc=$? $(tail -n 1 "$OUT/tests.log")"
for i in 1 2 3 4; do
  FA3LITE_STRESS=1 FA3LITE_STRESS_CALLS=500 timeout 200 python3 -m pytest -q -p no:cacheprovider -s -rf \
    --tb=short --hypothesis-seed="$i" tests/test_stress_gpu.py > "$OUT/stress$i.log" 2>&1 &
done
wait
for i in 1 2 3 4; do echo "== stress$i $(grep -E 'passed|failed' "$OUT/stress$i.log" | tail -n 1)"; done
