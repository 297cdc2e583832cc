#!/usr/bin/env bash
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
timeout 300 python3 benchmarks/nvidia-h100-x1-2026-11-26/session33/serial_tune/tune.py > "$OUT/serial_tune.log" 2>&1
echo "== rc=$?"; grep -v "^\s*$" "$OUT/serial_tune.log" | tail -30
