#!/usr/bin/env bash
# Prepared for session 55's first call (RESULTS section 54). Two questions, three trees:
#   _vo   83608da (before the persistent backward)
#   _land the landed persistent backward (the commit this folder came with, or later: HEAD before
#         the diff below)
#   .     _land + varlen_persistent.diff (the D = 64 varlen backward walks tiles too)
# Set up on the CPU side first (from the project root, the diff not yet applied):
#   rm -rf _vo _land && mkdir _vo _land
#   git archive 83608da cuda_src fa3lite | tar -x -C _vo && git archive HEAD cuda_src fa3lite | tar -x -C _land
#   git apply benchmarks/nvidia-h200-2026-11-29/session54/next_round/varlen_persistent.diff
# then two calls with carry ["_vo", "_land"]: `bash <this> a` (1., 2.'s tests, ~450 s), then
# `bash <this> b` (2.'s A/B, ~450 s).
# 1. Is the landed d = 256 causal backward (one CTA per tile, its mainloop's SASS as before) slower
#    than 83608da's? Main kernel per call (call_timeline), d = 256, the trees in both orders.
# 2. The varlen diff: debug build varlen + feature tests with FA3LITE_BWD_MAX_CTAS=3 (its new test
#    test_persistent_backward_walks_sequences included), dense backward tests (the producer's tile
#    body moved into load_tile), then A/B of the varlen backward at d = 64 (the bench's 7-sequence
#    batch, and 64 sequences of 256 tokens), 3 rounds; the dense d = 64 backward and its deterministic
#    mode (a one-tile grid of the persistent kernel: does deterministic / default stay >= 0.85, now
#    that the default walks?) on all three trees, 2 rounds.
set -u
export PYTHONUNBUFFERED=1
repo=$PWD
run() {  # tag root cell...
  local tag=$1 root=$(cd "$2" && pwd); shift 2
  local name="$*"
  local f="$OUT/timeline_${tag}_${name// /_}.txt"
  (cd $root && PYTHONPATH=$root FA3LITE_CACHE_DIR=/tmp/fa3c_$tag timeout 60 python3 $repo/tools/call_timeline.py "$@" bwd) >> $f 2>&1
  echo "$tag $* rc=$? $(grep -E 'fa3lite_bwd$' $f | tail -n 2 | tr -s ' ' | tr '\n' '|')"
}
if [ "${1:-}" = a ]; then
  for cell in "256 1024 1" "256 4096 1" "256 16384 1"; do
    run old _vo $cell; run land _land $cell; run land _land $cell; run old _vo $cell
  done
  PYTHONPATH=$PWD FA3LITE_BWD_MAX_CTAS=3 FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 170 python3 -m pytest -q -x \
    -p no:cacheprovider tests/test_varlen_gpu.py tests/test_features_gpu.py > $OUT/debug_features_cap3.log 2>&1
  echo "debug varlen/feature tests, 3 CTAs rc=$?"; tail -1 $OUT/debug_features_cap3.log
  PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 110 python3 -m pytest -q -x \
    -p no:cacheprovider tests/test_bwd_gpu.py > $OUT/debug_bwd.log 2>&1
  echo "debug bwd tests rc=$?"; tail -1 $OUT/debug_bwd.log
  cd $OUT && tar -czf logs_a.tgz timeline_*.txt && rm -f timeline_*.txt
  exit 0
fi
ROOT=$OUT
short=$(python3 -c "print(','.join(['256'] * 64))")
OUT=$ROOT/varlen AB_SCRIPT=tools/varlen_ab.py AB_TREES="land=_land walk=." timeout 150 bash tools/ab_round.sh 3 \
  --head-dim 64 --mode bwd --soak-ms 200 > $ROOT/ab_varlen.log 2>&1; echo "ab varlen rc=$?"
OUT=$ROOT/varlen_short AB_SCRIPT=tools/varlen_ab.py AB_TREES="land=_land walk=." timeout 120 bash tools/ab_round.sh 3 \
  --head-dim 64 --mode bwd --soak-ms 200 --lengths $short > $ROOT/ab_varlen_short.log 2>&1; echo "ab varlen short rc=$?"
OUT=$ROOT/dense AB_TREES="old=_vo land=_land walk=." timeout 170 bash tools/ab_round.sh 2 --head-dim 64 \
  --seqlen 1k,16k --mode bwd,det --soak-ms 200 > $ROOT/ab_dense.log 2>&1; echo "ab dense rc=$?"
OUT=$ROOT
for d in varlen varlen_short dense; do cat $OUT/$d/ab_summary.txt; done
cd $OUT && tar -czf logs_b.tgz ab_*.log varlen varlen_short dense && rm -rf varlen varlen_short dense
