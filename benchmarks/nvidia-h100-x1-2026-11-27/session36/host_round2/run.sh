#!/usr/bin/env bash
# Session 36, call 2: the decode step's host time with its wall time and the kernels of 50 eager calls
# (torch.profiler), to tell a host-paced step from a GPU-paced one (host_round1: 69 us without an
# append, 147 us with one).
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
timeout 200 python3 tools/decode_probe.py host > "$OUT/decode_host.log" 2>&1
echo "== decode host rc=$?"; grep -A8 "us host" "$OUT/decode_host.log"
