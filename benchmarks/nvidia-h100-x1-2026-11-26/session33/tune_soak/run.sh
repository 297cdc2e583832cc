#!/usr/bin/env bash
# Session 33: the forward tiles re-swept in the power-limited regime (each candidate's timed calls
# after 200 ms of the same call back to back), cuDNN alternating; one log per head dim.
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
for d in 64 128 256; do
  timeout 250 python3 tools/fwd_tune.py $d --interleave --soak-ms=200 > "$OUT/tune_$d.log" 2>&1
  echo "== tune d=$d rc=$?"
  grep "TFLOP" "$OUT/tune_$d.log"
done
