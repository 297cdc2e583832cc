#!/usr/bin/env bash
# Session 30, sync_round1: qstages_round1's synccheck reported 12 "Warpgroup MMA sequence error ...
# mismatching warpgroup instruction pc between warps" over tools/fwd_sanitize.py, and memcheck an
# out-of-bounds atomic (the tile counter, a temporary freed before the launch: fixed in fwd.py).
# Which cases, and whether the session's start (f606f84, _vh) had them: synccheck over both trees,
# memcheck over this one.
cd "$(dirname "$0")/../../../.."
for tree in _vh .; do
  tag=$([ $tree = . ] && echo now || echo f606f84)
  PYTHONPATH=$PWD/$tree:$PWD/tools PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool synccheck \
    --report-api-errors no python3 tools/fwd_sanitize.py > $OUT/sync_$tag.log 2>&1
  echo "$tag synccheck rc $?: $(tail -1 $OUT/sync_$tag.log)"
  python3 - $OUT/sync_$tag.log <<'PY'
import sys, collections
case, hits = None, collections.Counter()
for line in open(sys.argv[1]):
    if line.startswith("case "): case = line.strip()
    elif "Warpgroup MMA" in line or "divergent" in line or "Barrier error" in line: hits[(case, line.strip()[10:70])] += 1
for (c, what), n in sorted(hits.items()): print(f"  {n:4d} {c}: {what}")
PY
done
PYTHONPATH=$PWD:$PWD/tools PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool memcheck \
  --report-api-errors no python3 tools/fwd_sanitize.py > $OUT/memcheck_now.log 2>&1
echo "now memcheck rc $?: $(tail -1 $OUT/memcheck_now.log)"
