#!/usr/bin/env bash
# Session 35, last call, on the tree that lands (a24bbfd + CPU-side test helpers): release backward
# and training GPU tests (the CUDA-graph replay test on plain launches), the debug build (NaN-poisoned
# buffers, bounded waits) over the graph, first-tile and deterministic backward tests, and the
# hypothesis stress run at its full 10,000 calls (4 processes x 2,500).
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
python3 -c "from cuda.bindings import nvrtc; print('nvrtc', nvrtc.nvrtcVersion()[1:])" | tee -a "$OUT/device.txt"
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu -rf --tb=short tests/test_bwd_gpu.py \
  tests/test_training_gpu.py > "$OUT/tests.log" 2>&1
echo "== tests rc=$? $(tail -n 1 "$OUT/tests.log")"
FA3LITE_DEBUG=1 timeout 120 python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/test_bwd_gpu.py \
  -k "graph or first_tiles or deterministic_bitwise" > "$OUT/debug_tests.log" 2>&1
echo "== debug rc=$? $(tail -n 1 "$OUT/debug_tests.log")"
for i in 1 2 3 4; do
  FA3LITE_STRESS=1 FA3LITE_STRESS_CALLS=2500 timeout 240 python3 -m pytest -q -p no:cacheprovider -s -rf \
    --tb=short --hypothesis-seed="$((i + 10))" tests/test_stress_gpu.py > "$OUT/stress$i.log" 2>&1 &
done
wait
for i in 1 2 3 4; do echo "== stress$i $(grep -E 'stress:|passed|failed' "$OUT/stress$i.log" | tr '\n' ' ')"; done
