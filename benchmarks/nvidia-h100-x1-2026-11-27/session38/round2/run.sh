#!/usr/bin/env bash
# Session 38 round2 (issue 12): the varlen backward's dq/dk/dv come uninitialised, the preprocess
# zeroes the rows no sequence owns (three memsets of the packed tensors before). Debug (NaN-poisoned
# buffers) + release varlen GPU tests, release dense backward tests (PreParams grew), then the
# bench's varlen batch backward A/B against HEAD (_vo), 3 rounds alternating, and equal lengths
# (7 x 2341, the dense comparator's own shape) to see what a varlen call costs beyond the lengths.
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
python3 -m pip install -q -e ".[test,bench]" > $OUT/logs/install.log 2>&1
export PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/logs/device.txt
T="timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -rf --tb=short"
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3d $T tests/test_varlen_gpu.py > $OUT/logs/varlen_debug.log 2>&1; echo "varlen debug rc=$? $(tail -n1 $OUT/logs/varlen_debug.log)"
$T tests/test_varlen_gpu.py > $OUT/logs/varlen_release.log 2>&1; echo "varlen release rc=$? $(tail -n1 $OUT/logs/varlen_release.log)"
for r in 1 2 3; do
  for pair in before=_vo after=.; do
    (cd "${pair#*=}" && PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_${pair%%=*} timeout 150 python3 \
      "$OLDPWD/tools/varlen_ab.py" --tag "${pair%%=*}" --head-dim 64,128,256 --repeats 3 --mode bwd) >> $OUT/logs/ab.jsonl 2>> $OUT/logs/ab.err
  done
done
PYTHONPATH=$PWD timeout 150 python3 tools/varlen_ab.py --tag equal --head-dim 64,128,256 --repeats 3 --mode bwd \
  --lengths 2341,2341,2341,2341,2341,2341,2341 >> $OUT/logs/ab.jsonl 2>> $OUT/logs/ab.err
python3 - $OUT/logs/ab.jsonl <<'PY' | tee $OUT/logs/ab_summary.txt
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
cells = {}
for r in rows:
    cells.setdefault((r["kind"], r["d"], r["causal"]), {}).setdefault(r["tag"], []).extend(r["tflops"])
for (kind, d, causal), t in sorted(cells.items()):
    med = {k: statistics.median(v) for k, v in t.items()}
    b, a = med.get("before", 0), med.get("after", 0)
    print(f"{kind:7s} d={d:<4d} {'causal' if causal else 'full  '} before {b:6.1f} after {a:6.1f} ({a / b if b else 0:.3f})"
          f"  equal-lengths run {med.get('equal', 0):6.1f}")
PY
$T tests/test_bwd_gpu.py > $OUT/logs/bwd_release.log 2>&1; echo "bwd release rc=$? $(tail -n1 $OUT/logs/bwd_release.log)"
tar -czf $OUT/logs.tgz -C $OUT logs && rm -rf $OUT/logs
