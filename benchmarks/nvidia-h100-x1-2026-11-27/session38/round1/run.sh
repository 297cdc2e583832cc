#!/usr/bin/env bash
# Session 38 round1: (a) the varlen backward launched longest first (lpt_heads, as the dense causal
# backward): release + debug varlen GPU tests, then A/B of the bench's varlen batch backward against
# HEAD (_vo), 4 rounds alternating; (b) the short-keys split rule: kv-cache GPU tests release + debug,
# the split sweep at short caches (heuristic row beside every count).
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
python3 -m pip install -q -e ".[test,bench]" > $OUT/logs/install.log 2>&1
export PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/logs/device.txt
T="timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu -rf --tb=short"
$T tests/test_varlen_gpu.py > $OUT/logs/varlen_release.log 2>&1; echo "varlen release rc=$? $(tail -n1 $OUT/logs/varlen_release.log)"
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3d $T tests/test_varlen_gpu.py > $OUT/logs/varlen_debug.log 2>&1; echo "varlen debug rc=$? $(tail -n1 $OUT/logs/varlen_debug.log)"
for r in 1 2 3 4; do
  for pair in before=_vo after=.; do
    (cd "${pair#*=}" && PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_${pair%%=*} timeout 150 python3 \
      "$OLDPWD/tools/varlen_ab.py" --tag "${pair%%=*}" --head-dim 64,128,256 --repeats 3 --mode bwd) >> $OUT/logs/ab.jsonl 2>> $OUT/logs/ab.err
  done
done
python3 - $OUT/logs/ab.jsonl <<'PY' | tee $OUT/logs/ab_summary.txt
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
cells = {}
for r in rows:
    cells.setdefault((r["kind"], r["d"], r["causal"]), {}).setdefault(r["tag"], []).extend(r["tflops"])
for (kind, d, causal), t in sorted(cells.items()):
    b, a = statistics.median(t.get("before", [0])), statistics.median(t.get("after", [0]))
    print(f"{kind:7s} d={d:<4d} {'causal' if causal else 'full  '} before {b:6.1f} after {a:6.1f} ({a / b if b else 0:.3f})")
PY
$T tests/test_kvcache_gpu.py > $OUT/logs/kv_release.log 2>&1; echo "kv release rc=$? $(tail -n1 $OUT/logs/kv_release.log)"
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3d $T tests/test_kvcache_gpu.py > $OUT/logs/kv_debug.log 2>&1; echo "kv debug rc=$? $(tail -n1 $OUT/logs/kv_debug.log)"
PYTHONPATH=$PWD:$PWD/tools timeout 120 python3 tools/decode_probe.py sweep --shapes 1x1024,1x2048,2x1024,2x2048,4x1024,8x1024,8x2048 \
  --out $OUT/logs/sweep.json > $OUT/logs/sweep.log 2>&1; echo "sweep rc $?"; grep heuristic $OUT/logs/sweep.log
tar -czf $OUT/logs.tgz -C $OUT logs && rm -rf $OUT/logs
