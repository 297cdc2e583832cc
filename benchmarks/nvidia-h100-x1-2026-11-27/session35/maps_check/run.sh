#!/usr/bin/env bash
# Session 35: tile_io.cuh make_seq_maps copies each map template 16 bytes at a time (no spill in the
# d=64 varlen forward's 32-register producer under NVRTC 13.0). Release varlen and kv-cache GPU
# tests, the debug build (NaN-poisoned buffers, bounded waits) over the varlen tests, and the
# varlen_ab batch at d=64 against nothing (a smoke run of the bench's shapes).
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu -rf --tb=short tests/test_varlen_gpu.py \
  tests/test_kvcache_gpu.py > "$OUT/tests.log" 2>&1
echo "== tests rc=$? $(tail -n 1 "$OUT/tests.log")"
FA3LITE_DEBUG=1 timeout 100 python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/test_varlen_gpu.py \
  > "$OUT/debug_tests.log" 2>&1
echo "== debug rc=$? $(tail -n 1 "$OUT/debug_tests.log")"
timeout 60 python3 tools/varlen_ab.py --tag maps --head-dim 64,128 --repeats 3 | tee "$OUT/varlen.jsonl"
