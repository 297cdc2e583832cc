#!/usr/bin/env bash
# Session 29, decode_round2 (issue 13): decode rows read in place (kvcache.alias_rows: no q / out
# copies), the combine's loads all in flight and its writes through strides, index constants kept
# across a CUDA-graph capture. Debug-build GPU tests of the touched paths (kvcache, varlen, fast
# path), then the step's kernels from graph replays, HEAD's tree (_vh = f333d0e) beside this one,
# then memcheck over the kvcache tests.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
FA3LITE_DEBUG=1 timeout 280 python3 -m pytest -q -x -p no:cacheprovider tests/test_kvcache_gpu.py \
  tests/test_varlen_gpu.py tests/test_fastpath_gpu.py > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
tail -3 $OUT/tests_debug.log
for tree in after head; do
  if [ $tree = head ]; then P=$PWD/_vh:$PWD/tools; else P=$PWD:$PWD/tools; fi
  PYTHONPATH=$P timeout 100 python3 tools/decode_probe.py timeline --out $OUT/timeline_$tree.json \
    > $OUT/timeline_$tree.log 2>&1; echo "rc $?" >> $OUT/timeline_$tree.log
done
python3 - <<'PY' > $OUT/timeline_summary.txt
import json, os
out = os.environ["OUT"]
for tree in ("head", "after"):
    for r in json.load(open(f"{out}/timeline_{tree}.json")):
        ks = " + ".join(f"{k['name'][:18]} {k['dur_us']:.1f}" for k in r["kernels"])
        print(f"{tree:5s} B={r['B']} L={r['L']:6d} {r['impl']:7s} period {r['period_us']:6.1f} us: {ks}")
PY
cat $OUT/timeline_summary.txt
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 1 \
  python3 -m pytest -q -x -p no:cacheprovider tests/test_kvcache_gpu.py -k "contiguous or explicit_num_splits or malformed or paged" \
  > $OUT/memcheck.log 2>&1; echo "rc $?" >> $OUT/memcheck.log
tail -3 $OUT/memcheck.log
