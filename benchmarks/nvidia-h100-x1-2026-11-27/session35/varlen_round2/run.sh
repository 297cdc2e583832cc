#!/usr/bin/env bash
# Session 35, call 9: varlen_round1's A/B again at d=128 only (there: full +3%, causal -3%, dense
# controls 0.97-1.04), 6 rounds alternating; then the release test files varlen_round1's 200 s cut
# off (features, feature property: hypothesis vs the Numba oracle, varlen cases included).
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
for r in 1 2 3 4 5 6; do
  for pair in before=_vq after=.; do
    (cd "${pair#*=}" && PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_${pair%%=*} timeout 120 python3 \
      "$OLDPWD/tools/varlen_ab.py" --tag "${pair%%=*}" --head-dim 128 --repeats 3) >> "$OUT/ab.jsonl" 2>> "$OUT/ab.err"
  done
done
python3 - "$OUT/ab.jsonl" <<'PY' | tee "$OUT/ab_summary.txt"
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
cells = {}
for r in rows:
    cells.setdefault((r["kind"], r["d"], r["causal"]), {}).setdefault(r["tag"], []).extend(r["tflops"])
for (kind, d, causal), t in sorted(cells.items()):
    b, a = statistics.median(t.get("before", [0])), statistics.median(t.get("after", [0]))
    print(f"{kind:7s} d={d:<4d} {'causal' if causal else 'full  '} before {b:6.1f} after {a:6.1f} ({a / b if b else 0:.3f})")
PY
timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu -rf --tb=short tests/test_features_gpu.py \
  tests/test_features_property_gpu.py > "$OUT/tests.log" 2>&1
echo "== tests rc=$? $(tail -n 1 "$OUT/tests.log")"
