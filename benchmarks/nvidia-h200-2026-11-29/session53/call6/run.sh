#!/usr/bin/env bash
# Session 53, call 6: call 5's traced builds read the persistent backward 3-5% shorter, call 2's
# release A/B 1-4% slower (full masks; causal d = 128 / 256 much slower). The release main kernel
# alone, per tree (tools/call_timeline.py: CUDA-event call time, then each kernel's mean in a 20-call
# profiler window, cold and soaked), two rounds: HEAD (.) vs persistent (_vp), d = 64 and 128,
# full and causal, 1k.
set -u
export PYTHONUNBUFFERED=1
repo=$PWD
for round in 1 2; do
for cell in "64 1024 0" "64 1024 1" "128 1024 0" "128 1024 1"; do
  for pair in head=. persistent=_vp; do
    tag=${pair%%=*}; root=$(cd "${pair#*=}" && pwd)
    f="$OUT/timeline_${tag}_${cell// /_}_r$round.txt"
    (cd $root && PYTHONPATH=$root FA3LITE_CACHE_DIR=/tmp/fa3c_$tag timeout 60 python3 $repo/tools/call_timeline.py $cell bwd) > $f 2>&1
    echo "r$round $tag $cell rc=$? $(grep -E 'fa3lite_bwd$|TFLOP' $f | tr -s ' ' | tr '\n' '|')"
  done
done
done
cd $OUT && tar -czf timelines.tgz timeline_*.txt && rm -f timeline_*.txt
