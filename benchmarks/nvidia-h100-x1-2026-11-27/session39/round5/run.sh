#!/usr/bin/env bash
# Session 39 round5: where the varlen backward's time goes beside the dense one's, per kernel
# (torch.profiler): round3's ncu put the main kernel at 1.02-1.03x the dense one's time at equal
# lengths, against 0.93-0.97 for the whole backward (RESULTS section 38).
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}
python3 -m pip install -q -e ".[test,bench]" > /dev/null 2>&1
export PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
PYTHONPATH=$PWD timeout 200 python3 benchmarks/nvidia-h100-x1-2026-11-27/session39/round5/kernel_split.py > $OUT/split.jsonl 2> $OUT/split.err
echo "rc=$?"; tail -3 $OUT/split.err
python3 - $OUT/split.jsonl <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    top = ", ".join(f"{k.split('(')[0][:28]} {v:.0f}" for k, v in list(r["kernels"].items())[:6])
    print(f"{r['batch']:5} d={r['d']} {'causal' if r['causal'] else 'full  '} {r['kind']:6} span {r['span_us']:7.0f} kernels {r['all_us']:7.0f}: {top}")
PY
