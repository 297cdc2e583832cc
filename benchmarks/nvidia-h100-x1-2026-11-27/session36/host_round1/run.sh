#!/usr/bin/env bash
# Session 36, call 1: where the host time of a decode step goes (issues 10, 13): cProfile of
# flash_attn_with_kvcache at B=1 1k without and with an appended row, B=8 8k; the same for
# flash_attn_func's forward (tools/host_profile.py).
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
timeout 200 python3 tools/decode_probe.py host > "$OUT/decode_host.log" 2>&1
echo "== decode host rc=$?"; grep "us host" "$OUT/decode_host.log"
timeout 150 python3 tools/host_profile.py --out "$OUT/host_profile.json" > "$OUT/host_profile.log" 2>&1
echo "== host_profile rc=$?"; head -30 "$OUT/host_profile.log"
