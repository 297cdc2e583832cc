#!/usr/bin/env bash
# Session 36, last call: release GPU tests the session's host-path changes touch (the autograd node with out
# alone: backward, hardening, features with sinks; kv-cache ran in decode_round1), then one interleaved
# host table (tools/host_profile.py, cuDNN's backend context entered per batch as the bench does).
set -u
OUT=${OUT:-/tmp/out}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
timeout 300 python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/test_bwd_gpu.py tests/test_hardening_gpu.py \
  tests/test_features_gpu.py > "$OUT/tests.log" 2>&1
echo "== tests rc=$? $(tail -n 1 "$OUT/tests.log")"
timeout 90 python3 tools/host_profile.py --out "$OUT/host_profile.json" > /dev/null 2>&1
echo "== host_profile rc=$?"
python3 -c "import json; [print(f'{k:40s} {v:7.1f}') for k, v in json.load(open('$OUT/host_profile.json'))['interleaved_us'].items()]"
