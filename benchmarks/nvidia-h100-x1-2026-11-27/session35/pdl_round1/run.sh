#!/usr/bin/env bash
# Session 35, call 6: the backward's main kernel and postprocess as programmatic dependent launches
# (each starts while the kernel before it ends: set-up and K/V loads under the preprocess's last wave,
# the postprocess resident before the main kernel's last CTAs finish). A/B vs _vp (this tree with
# plain launches; the kernels' griddepcontrol.wait is then a no-op); release backward + training
# tests (new: the backward replayed in a CUDA graph); debug build of the graph and first-tile tests;
# racecheck, synccheck, memcheck over race_bwd.py.
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
AB_TREES="before=_vp after=." OUT=$OUT bash tools/ab_round.sh 3 --mode bwd --head-dim 64,128,256 --seqlen 1k,4k
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -rf --tb=short tests/test_bwd_gpu.py \
  tests/test_training_gpu.py > "$OUT/tests.log" 2>&1
echo "== tests rc=$? $(tail -n 1 "$OUT/tests.log")"
FA3LITE_DEBUG=1 timeout 100 python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/test_bwd_gpu.py \
  -k "graph or first_tiles" > "$OUT/debug_tests.log" 2>&1
echo "== debug rc=$? $(tail -n 1 "$OUT/debug_tests.log")"
for tool in racecheck synccheck memcheck; do
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 45 compute-sanitizer --tool "$tool" \
    --report-api-errors no python3 tools/race_bwd.py > "$OUT/race_${tool}.log" 2>&1
  echo "== race_bwd $tool rc=$? $(tail -n 1 "$OUT/race_${tool}.log")"
  cat "$OUT/race_${tool}.log" >> "$OUT/race.log" && rm "$OUT/race_${tool}.log"
done
