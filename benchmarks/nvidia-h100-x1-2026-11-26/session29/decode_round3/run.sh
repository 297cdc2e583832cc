#!/usr/bin/env bash
# Session 29, decode_round3 (issue 13): round 2's tree plus the split kernel loading through the
# packed tensors' own maps (config.cuh kSeqMaps: no per-sequence map copies before its first load;
# V's tail cleared as the paged kernel does). Debug-build GPU tests of the split / varlen / kvcache
# paths, the step's kernels beside HEAD's tree (_vh = f333d0e), the split kernel's per-CTA trace,
# memcheck over the kvcache tests (API errors of cuda-bindings' entry-point probing not reported).
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
FA3LITE_DEBUG=1 timeout 280 python3 -m pytest -q -x -p no:cacheprovider tests/test_kvcache_gpu.py \
  tests/test_varlen_gpu.py tests/test_fastpath_gpu.py > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
tail -2 $OUT/tests_debug.log
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
        ks = " + ".join(f"{k['name'][:14]} {k['dur_us']:.1f}" for k in r["kernels"])
        print(f"{tree:5s} B={r['B']} L={r['L']:6d} {r['impl']:7s} period {r['period_us']:6.1f} us: {ks}")
PY
cat $OUT/timeline_summary.txt
timeout 60 python3 tools/decode_probe.py trace --out $OUT/trace.json > $OUT/trace.log 2>&1; echo "rc $?" >> $OUT/trace.log
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 1 \
  python3 -m pytest -q -x -p no:cacheprovider tests/test_kvcache_gpu.py -k "contiguous or explicit_num_splits or malformed or paged or sink" \
  > $OUT/memcheck.log 2>&1; echo "rc $?" >> $OUT/memcheck.log
tail -3 $OUT/memcheck.log
