#!/usr/bin/env bash
# Session 54, call 4: the main kernel's time per call (tools/call_timeline.py: 20-call profiler
# windows, cold and soaked; far tighter than the A/B's 1-2% round spread) for HEAD (_vo) and the
# walking rule (.: d = 64 walks always, wider heads at query lengths <= 2048). walk = the rule tree
# with FA3LITE_BWD_MAX_CTAS=132, which makes CTAs walk where the rule would not (long d = 128/256):
# does the new code cost there, or the walking?
set -u
export PYTHONUNBUFFERED=1
repo=$PWD
run() {  # tag root env cell...
  local tag=$1 root=$(cd "$2" && pwd) env=$3; shift 3
  local name="$*"
  local f="$OUT/timeline_${tag}_${name// /_}.txt"
  (cd $root && env $env PYTHONPATH=$root FA3LITE_CACHE_DIR=/tmp/fa3c_${tag%%_*} timeout 60 python3 $repo/tools/call_timeline.py "$@" bwd) > $f 2>&1
  echo "$tag $* rc=$? $(grep -E 'fa3lite_bwd$' $f | tr -s ' ' | tr '\n' '|')"
}
for cell in "256 1024 1" "256 1024 0" "256 4096 1" "256 16384 1" "128 16384 1" "128 16384 0" \
            "64 16384 0" "64 16384 1" "128 2048 0" "128 2048 1"; do
  run head _vo "X=0" $cell
  run rule . "X=0" $cell
done
for cell in "256 4096 1" "256 16384 1" "128 16384 1" "128 16384 0"; do
  run rule_walk . "FA3LITE_BWD_MAX_CTAS=132" $cell
done
cd $OUT && tar -czf timelines.tgz timeline_*.txt && rm -f timeline_*.txt
