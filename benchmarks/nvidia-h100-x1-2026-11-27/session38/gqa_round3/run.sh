#!/usr/bin/env bash
# Session 38 gqa_round3: the grouped GQA backward's causal launch order. gqa_round2 read d=128
# causal Hk=4 at 1k / 4k 0.528 / 1.548 ms with L2-sized groups counting a pair's 4 heads (one pair
# a group at 4k) and 0.648 / 1.499 with every pair in one group. Three rules (tools/gqa_probe.py
# --lpt) in separate processes, rotated, 3 rounds; the f32 form (ratio 1) as the control.
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}
python3 -m pip install -q -e ".[test,bench]" > $OUT/install.log 2>&1
export PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
for r in 1 2 3; do
  for rule in l2 head all; do
    timeout 90 python3 tools/gqa_probe.py --tag r$r --lpt $rule --head-dim 128 --masks causal \
      --seqlen 1024,2048,4096,8192 --ratios 1,2,4 >> $OUT/lpt.jsonl 2>> $OUT/lpt.err
  done
done
python3 - $OUT/lpt.jsonl <<'PY' | tee $OUT/lpt_summary.txt
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
cells = {}
for r in rows:
    cells.setdefault((r["S"], r["hk"]), {}).setdefault(r["lpt"], []).extend(r["ms"])
for (s, hk), t in sorted(cells.items()):
    print(f"d=128 causal S={s:<5d} Hk={hk:<3d} " + "  ".join(f"{k} {statistics.median(v):.3f}" for k, v in sorted(t.items())) + " ms")
PY
