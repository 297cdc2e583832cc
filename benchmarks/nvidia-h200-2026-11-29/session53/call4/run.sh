#!/usr/bin/env bash
# Session 53, call 4: the side kernels' grid order. Trees: before = _vo (HEAD), rev = _vr (HEAD +
# call 3's reversed postprocess), after = . (preprocess and postprocess heads fastest, so the CTAs
# running together read / write whole (B, S, H, D) rows; postprocess from the last batch back).
# 1. Debug build: backward tests; varlen tests (their pre/postprocess paths).
# 2. call_timeline per tree, two rounds: d = 64 / 128 causal 1k, d = 64 full 4k, d = 128 full 16k.
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 130 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_bwd_gpu.py > $OUT/debug_bwd.log 2>&1
echo "debug bwd tests rc=$?"; tail -1 $OUT/debug_bwd.log
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 150 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_varlen_gpu.py > $OUT/debug_varlen.log 2>&1
echo "debug varlen tests rc=$?"; tail -1 $OUT/debug_varlen.log
repo=$PWD
for round in 1 2; do
for cell in "64 1024 1" "128 1024 1" "64 4096 0" "128 16384 0"; do
  for pair in before=_vo rev=_vr after=.; do
    tag=${pair%%=*}; root=$(cd "${pair#*=}" && pwd)
    f="$OUT/timeline_${tag}_${cell// /_}_r$round.txt"
    (cd $root && PYTHONPATH=$root FA3LITE_CACHE_DIR=/tmp/fa3c_$tag timeout 60 python3 $repo/tools/call_timeline.py $cell bwd) > $f 2>&1
    echo "timeline r$round $tag $cell rc=$? $(grep -E 'fa3lite_bwd_(pre|post)process' $f | awk '{print $5"="$3}' | tr '\n' ' ')"
  done
done
done
cd $OUT && tar -czf timelines.tgz timeline_*.txt && rm -f timeline_*.txt
