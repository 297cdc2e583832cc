#!/usr/bin/env bash
# Session 54, call 5: the landing candidate -- the dynamic persistent backward for the D = 64 kernels
# only (BwdVariant.persistent -> FA3LITE_BWD_PERSISTENT -> kPersistent); the wider kernels are
# compiled without the tile walk and launched one CTA per tile.
# 1. Debug build (bounded waits, NaN-poisoned outputs): backward tests; the same with
#    FA3LITE_BWD_MAX_CTAS=3 (D = 64 CTAs walk many tiles).
# 2. Main kernel per call (call_timeline), HEAD (_vo) vs this tree, where call 4 read the wider
#    kernels 1-3% slower (d = 256 causal 4k, d = 128 causal 16k) and the D = 64 / d = 128 1k cells.
# 3. Debug build varlen and feature tests; racecheck over tools/race_bwd.py with the cap at 2.
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 130 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_bwd_gpu.py > $OUT/debug_bwd.log 2>&1
echo "debug bwd tests rc=$?"; tail -1 $OUT/debug_bwd.log
PYTHONPATH=$PWD FA3LITE_BWD_MAX_CTAS=3 FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 60 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_bwd_gpu.py > $OUT/debug_bwd_cap3.log 2>&1
echo "debug bwd tests, 3 CTAs rc=$?"; tail -1 $OUT/debug_bwd_cap3.log
repo=$PWD
run() {  # tag root cell...
  local tag=$1 root=$(cd "$2" && pwd); shift 2
  local name="$*"
  local f="$OUT/timeline_${tag}_${name// /_}.txt"
  (cd $root && PYTHONPATH=$root FA3LITE_CACHE_DIR=/tmp/fa3c_$tag timeout 60 python3 $repo/tools/call_timeline.py "$@" bwd) > $f 2>&1
  echo "$tag $* rc=$? $(grep -E 'fa3lite_bwd$' $f | tr -s ' ' | tr '\n' '|')"
}
for cell in "256 4096 1" "128 16384 1" "64 1024 1" "128 1024 0"; do
  run head _vo $cell
  run new . $cell
done
PYTHONPATH=$PWD FA3LITE_BWD_MAX_CTAS=3 FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 170 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_varlen_gpu.py tests/test_features_gpu.py > $OUT/debug_features_cap3.log 2>&1
echo "debug varlen/feature tests, 3 CTAs rc=$?"; tail -1 $OUT/debug_features_cap3.log
PYTHONPATH=$PWD FA3LITE_BWD_MAX_CTAS=2 FA3LITE_CACHE_DIR=/tmp/fa3c PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 80 \
  compute-sanitizer --tool racecheck --report-api-errors no python3 tools/race_bwd.py > $OUT/san_bwd_racecheck.log 2>&1
echo "race_bwd racecheck rc=$? $(tail -n 1 $OUT/san_bwd_racecheck.log) ok=$(grep -c ': ok' $OUT/san_bwd_racecheck.log)"
cd $OUT && tar -czf timelines.tgz timeline_*.txt && rm -f timeline_*.txt
