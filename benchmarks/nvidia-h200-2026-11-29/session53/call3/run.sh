#!/usr/bin/env bash
# Session 53, call 3: the backward's side kernels. Preprocess: 4 rows a thread, loads of all of them
# before the first sum (was one row a thread: 134 MB in 46 us, ~2.9 TB/s, session 52 call8).
# Postprocess: query blocks in reverse, so the last heads' accumulator, still in L2 when the main
# kernel ends, is read first. Trees: before = _vo (HEAD), after = . .
# 1. Debug build (bounded waits, NaN-poisoned outputs): backward tests; varlen and feature tests.
# 2. call_timeline (each kernel's mean time in a 20-call profiler window) per tree, d = 64 / 128
#    causal 1k and d = 64 full 4k.
# 3. A/B, 3 rounds, backward d = 64/128/256 at 1k/4k, both masks.
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 130 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_bwd_gpu.py > $OUT/debug_bwd.log 2>&1
echo "debug bwd tests rc=$?"; tail -1 $OUT/debug_bwd.log
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 200 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_varlen_gpu.py tests/test_features_gpu.py > $OUT/debug_features.log 2>&1
echo "debug varlen/feature tests rc=$?"; tail -1 $OUT/debug_features.log
repo=$PWD
for cell in "64 1024 1" "128 1024 1" "64 4096 0"; do
  for pair in before=_vo after=.; do
    tag=${pair%%=*}; root=$(cd "${pair#*=}" && pwd)
    (cd $root && PYTHONPATH=$root FA3LITE_CACHE_DIR=/tmp/fa3c_$tag timeout 90 python3 $repo/tools/call_timeline.py $cell bwd) \
      > "$OUT/timeline_${tag}_${cell// /_}.txt" 2>&1
    echo "timeline $tag $cell rc=$?"; grep -i -E "preprocess|postprocess|fa3lite_bwd\b" "$OUT/timeline_${tag}_${cell// /_}.txt" | head -6
  done
done
ROOT=$OUT
OUT=$ROOT/bwd AB_TREES="before=_vo after=." timeout 260 bash tools/ab_round.sh 3 --head-dim 64,128,256 \
  --seqlen 1k,4k --mode bwd --soak-ms 200 > $ROOT/ab_bwd.log 2>&1; echo "ab bwd rc=$?"
OUT=$ROOT
cat $OUT/bwd/ab_summary.txt
cd $OUT && tar -czf ab_bwd.tgz bwd timeline_*.txt && rm -rf bwd timeline_*.txt
