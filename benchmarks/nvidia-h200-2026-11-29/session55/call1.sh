#!/usr/bin/env bash
# Session 55, call 1 of 4 back to back on one warm H200 (carry _vo, _land, .peers/p1).
# Trees: _vo = 83608da (before the persistent backward), _land = 3c4de97 (landed), . = _land +
# session54/next_round/varlen_persistent.diff (the D = 64 varlen backward walks tiles too).
#   FA4's first part staged; the d = 256 causal 4k main kernel, old vs landed in both orders
#   (call_timeline); debug build: varlen + feature tests with 3 CTAs walking, then the backward tests
#   (the entry's grid check of 5df127e runs in them).
set -u
export PYTHONUNBUFFERED=1
bash tools/speed_round.sh peers_part
repo=$PWD
run() {  # tag root cell...
  local tag=$1 root=$(cd "$2" && pwd); shift 2
  local name="$*"
  local f="$OUT/timeline_${tag}_${name// /_}.txt"
  (cd $root && PYTHONPATH=$root FA3LITE_CACHE_DIR=/tmp/fa3c_$tag timeout 60 python3 $repo/tools/call_timeline.py "$@" bwd) >> $f 2>&1
  echo "$tag $* rc=$? $(grep -E 'fa3lite_bwd$' $f | tail -n 2 | tr -s ' ' | tr '\n' '|')"
}
for t in "old _vo" "land _land" "land _land" "old _vo"; do run $t 256 4096 1; done
PYTHONPATH=$PWD FA3LITE_BWD_MAX_CTAS=3 FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 170 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_varlen_gpu.py tests/test_features_gpu.py > $OUT/debug_features_cap3.log 2>&1
echo "debug varlen/feature tests, 3 CTAs rc=$?"; tail -n 1 $OUT/debug_features_cap3.log
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 110 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_bwd_gpu.py > $OUT/debug_bwd.log 2>&1
echo "debug bwd tests rc=$?"; tail -n 1 $OUT/debug_bwd.log
cd $OUT && tar -czf timelines.tgz timeline_*.txt && rm -f timeline_*.txt
