#!/usr/bin/env bash
# Session 30, grouped_round1 (issue 13): the split kernel reads a step's q in place for any number of
# query positions (grouped rows: one strided tensor map over q, out / lse written in the step's
# layout; replaces the one-position overlapping-rows view). Debug-build kvcache GPU tests (new:
# groups of 3 / 7 / 16, steps of two tiles) and the varlen split tests, then each step's kernels from
# graph replays, this tree vs f606f84 (_vp), alternating: Sq=1 once, Sq=4 twice.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
FA3LITE_DEBUG=1 timeout 300 python3 -m pytest -q -x -p no:cacheprovider tests/test_kvcache_gpu.py \
  tests/test_varlen_gpu.py > $OUT/tests_debug.log 2>&1
echo "rc $?" >> $OUT/tests_debug.log
tail -3 $OUT/tests_debug.log
for i in 1 2; do
  for tree in after before; do
    if [ $tree = before ]; then P=$PWD/_vp:$PWD/tools; else P=$PWD:$PWD/tools; fi
    if [ $i = 1 ]; then
      PYTHONPATH=$P timeout 60 python3 tools/decode_probe.py timeline --out $OUT/sq1_${tree}.json > /dev/null 2>&1
    fi
    PYTHONPATH=$P timeout 60 python3 tools/decode_probe.py timeline --sq 4 --shapes 1x8192,8x1024,8x8192,64x1024 \
      --out $OUT/sq4_${tree}_$i.json > /dev/null 2>&1
  done
done
python3 - <<'PY' | tee $OUT/timeline_summary.txt
import glob, json, os
out = os.environ["OUT"]
for path in sorted(glob.glob(f"{out}/sq*.json")):
    for r in json.load(open(path)):
        ks = " + ".join(f"{k['name'][:14]} {k['dur_us']:.1f}" for k in r.get("kernels", []))
        print(f"{os.path.basename(path):18s} Sq={r['sq']} B={r['B']:2d} L={r['L']:6d} {r['impl']:7s} "
              f"period {r.get('period_us', float('nan')):6.1f} us: {ks}")
PY
