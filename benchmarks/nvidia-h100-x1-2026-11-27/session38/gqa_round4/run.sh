#!/usr/bin/env bash
# Session 38 gqa_round4: the final grouped GQA backward (launch groups counting one head a pair,
# gqa_round3's best) against HEAD before it (_vo: f32 dK/dV per query head, summed by torch),
# 3 rounds alternating; release grouped tests first.
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}
python3 -m pip install -q -e ".[test,bench]" > $OUT/install.log 2>&1
export PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu -rf --tb=short -x tests/test_bwd_gpu.py -k "grouped or head_layouts" > $OUT/tests.log 2>&1
echo "grouped tests rc=$? $(tail -n1 $OUT/tests.log)"
for r in 1 2 3; do
  for pair in before=_vo after=.; do
    (cd "${pair#*=}" && PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_${pair%%=*} timeout 120 python3 \
      "$OLDPWD/tools/gqa_probe.py" --tag "${pair%%=*}" --ratios 1,2,4) >> $OUT/gqa.jsonl 2>> $OUT/gqa.err
  done
done
python3 - $OUT/gqa.jsonl <<'PY' | tee $OUT/gqa_summary.txt
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
cells = {}
for r in rows:
    cells.setdefault((r["d"], r["S"], r["causal"], r["hk"]), {}).setdefault(r["tag"], []).extend(r["ms"])
for (d, s, c, hk), t in sorted(cells.items()):
    med = {k: statistics.median(v) for k, v in t.items()}
    ref = statistics.median(cells[(d, s, c, 2048 // d)]["after"])
    print(f"d={d:<4d} S={s:<5d} {'causal' if c else 'full  '} Hk={hk:<3d} before {med['before']:.3f} after {med['after']:.3f} ms"
          f" (x{med['before'] / med['after']:.3f} faster; after / Hk=Hq {med['after'] / ref:.3f})")
PY
