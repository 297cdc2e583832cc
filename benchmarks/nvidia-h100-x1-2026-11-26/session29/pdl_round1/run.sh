#!/usr/bin/env bash
# Session 29, pdl_round1 (issue 13): the combine as a programmatic dependent launch of the split
# kernel (it reads its sequence's rows while the split CTAs finish, then griddepcontrol.wait).
# Debug-build kvcache / varlen tests (CUDA-graph capture included), then the decode step's kernels
# from graph replays for this tree and 98c6096's (_vp), alternating, twice.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
FA3LITE_DEBUG=1 timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/test_kvcache_gpu.py tests/test_varlen_gpu.py \
  > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
tail -2 $OUT/tests_debug.log
for i in 1 2; do
  for tree in after before; do
    if [ $tree = before ]; then P=$PWD/_vp:$PWD/tools; else P=$PWD:$PWD/tools; fi
    PYTHONPATH=$P timeout 100 python3 tools/decode_probe.py timeline --out $OUT/timeline_${tree}_$i.json > /dev/null 2>&1
  done
done
python3 - <<'PY' | tee $OUT/timeline_summary.txt
import json, os
out = os.environ["OUT"]
for i in (1, 2):
    for tree in ("before", "after"):
        for r in json.load(open(f"{out}/timeline_{tree}_{i}.json")):
            ks = " + ".join(f"{k['name'][:14]} @{k['start_us']:.1f} {k['dur_us']:.1f}" for k in r["kernels"])
            print(f"{i} {tree:6s} B={r['B']} L={r['L']:6d} {r['impl']:7s} period {r['period_us']:6.1f} us: {ks}")
PY
