#!/usr/bin/env bash
# Session 36, call 3: each stage of the decode step with an appended row timed alone
# (tools/decode_probe.py host_split), B=1, 1k, Hq/Hk 32/8, d=128, bf16.
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
timeout 200 python3 tools/decode_probe.py host_split > "$OUT/host_split.log" 2>&1
echo "== host_split rc=$?"; cat "$OUT/host_split.log"
