#!/usr/bin/env bash
# Session 45 round1.
#  1. Host time of the training step: the eager backward node's gradients (and, when small, its work
#     buffer) in one allocation. tools/host_split.py (interleaved steps, medians) alternating the
#     tree before (_vo = git archive of 1be2703) and this one, 3 processes each.
#  2. Debug-build (NaN-poisoned buffers, bounded waits) fast-path and training GPU tests.
#  3. d = 64 full forward tiles: today's (overlap), the same serial (the control), FA4's 144-key block
#     and 160 keys, serial (ours spills with the overlap there); tools/fwd_tune.py interleaved with cuDNN.
set -u
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
export FA3LITE_CACHE_DIR=/tmp/fa3c PYTHONUNBUFFERED=1
for i in 1 2 3; do
  for tree in _vo .; do
    tag=$([ $tree = . ] && echo after || echo before)
    PYTHONPATH=$PWD/$tree timeout 120 python3 tools/host_split.py --rounds 9 --out $OUT/host_${tag}_$i.json \
      > $OUT/host_${tag}_$i.log 2>&1; echo "host $tag $i rc=$?"
  done
done
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 200 python3 -m pytest -q -x -p no:cacheprovider \
  tests/test_fastpath_gpu.py tests/test_training_gpu.py tests/test_plans.py > $OUT/debug_tests.log 2>&1
echo "debug tests rc=$?"; tail -2 $OUT/debug_tests.log
PYTHONPATH=$PWD timeout 200 python3 tools/fwd_tune.py 64 --interleave --full --soak-ms=200 \
  --tiles="192,128,2,1,0,1;192,128,2,0,0,1;192,144,2,0,0,1;192,160,2,0,0,1" > $OUT/tiles.log 2>&1; echo "tiles rc=$?"
cat $OUT/tiles.log | grep TFLOP
python3 - <<'PY'
import json, glob, os, statistics
out = os.environ["OUT"]
for tag in ("before", "after"):
    runs = [json.load(open(f))["host_us"] for f in sorted(glob.glob(f"{out}/host_{tag}_*.json"))]
    if runs:
        keys = runs[0].keys()
        print(tag, {k: round(statistics.median(r[k] for r in runs), 1) for k in keys})
PY
