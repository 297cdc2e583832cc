#!/usr/bin/env bash
# Session 38 gqa_round1: what GQA costs the backward today (dK/dV per query head in f32, summed by
# torch), against Hk = Hq at the same FLOPs.
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}
python3 -m pip install -q -e ".[test,bench]" > $OUT/install.log 2>&1
export PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
PYTHONPATH=$PWD timeout 240 python3 tools/gqa_probe.py --tag head > $OUT/gqa.jsonl 2> $OUT/gqa.err
python3 - $OUT/gqa.jsonl <<'PY' | tee $OUT/gqa_summary.txt
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
base = {(r["d"], r["S"], r["causal"]): statistics.median(r["ms"]) for r in rows if r["hk"] == r["hq"]}
for r in rows:
    m = statistics.median(r["ms"])
    print(f"d={r['d']:<4d} S={r['S']:<5d} {'causal' if r['causal'] else 'full  '} Hq/Hk={r['hq']}/{r['hk']:<3d} "
          f"{m:.3f} ms  {statistics.median(r['tflops']):6.1f} TFLOP/s  x{m / base[(r['d'], r['S'], r['causal'])]:.3f} of Hk=Hq")
PY
