#!/usr/bin/env bash
# Session 38 gqa_round5: grouped GQA in the varlen backward too. Debug (NaN-poisoned buffers,
# bounded waits) + release varlen GPU tests incl. the forced-grouped ones, then the bench's varlen
# batch with 4 query heads per K/V head, backward, against HEAD (_vo: f32 dK/dV per query head),
# 3 rounds alternating (the dense comparator, already grouped in both, as the control).
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}
python3 -m pip install -q -e ".[test,bench]" > $OUT/install.log 2>&1
export PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
T="python3 -m pytest -q -p no:cacheprovider -m gpu -rf --tb=short -x"
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3d timeout 150 $T tests/test_varlen_gpu.py > $OUT/varlen_debug.log 2>&1; echo "varlen debug rc=$? $(tail -n1 $OUT/varlen_debug.log)"
timeout 120 $T tests/test_varlen_gpu.py > $OUT/varlen_release.log 2>&1; echo "varlen release rc=$? $(tail -n1 $OUT/varlen_release.log)"
for r in 1 2 3; do
  for pair in before=_vo after=.; do
    (cd "${pair#*=}" && PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_${pair%%=*} timeout 100 python3 \
      "$OLDPWD/tools/varlen_ab.py" --tag "${pair%%=*}" --head-dim 128 --repeats 3 --mode bwd --group 4) >> $OUT/ab.jsonl 2>> $OUT/ab.err
  done
done
python3 - $OUT/ab.jsonl <<'PY' | tee $OUT/ab_summary.txt
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
cells = {}
for r in rows:
    cells.setdefault((r["kind"], r["d"], r["causal"]), {}).setdefault(r["tag"], []).extend(r["tflops"])
for (kind, d, causal), t in sorted(cells.items()):
    b, a = statistics.median(t["before"]), statistics.median(t["after"])
    print(f"{kind:7s} d={d:<4d} {'causal' if causal else 'full  '} Hq/Hk=16/4 before {b:6.1f} after {a:6.1f} TFLOP/s ({a / b:.3f})")
PY
