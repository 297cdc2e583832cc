#!/usr/bin/env bash
# Session 55, call 5 (carry _land): 0d2d550 (the D = 64 varlen backward walks tiles) checked once more.
# 1. compute-sanitizer racecheck, synccheck, memcheck over tools/race_bwd.py with FA3LITE_BWD_MAX_CTAS=2
#    (its varlen calls now include D = 64 MHA, which walks without the head walk).
# 2. Main kernel per call (call_timeline), _land (3c4de97) vs this tree in both orders, dense d = 64
#    causal 1k / 16k: call 2's A/B read the dense causal 1k backward 2.3% lower with the producer's tile
#    body moved into load_tile (2 rounds).
# 3. tools/det_stress.py at d = 64 (deterministic turns on the persistent kernel's one-tile grid).
set -u
export PYTHONUNBUFFERED=1
for tool in racecheck synccheck memcheck; do
  PYTHONPATH=$PWD FA3LITE_BWD_MAX_CTAS=2 FA3LITE_CACHE_DIR=/tmp/fa3c PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 90 \
    compute-sanitizer --tool $tool --report-api-errors no python3 tools/race_bwd.py > $OUT/san_bwd_$tool.log 2>&1
  echo "race_bwd $tool rc=$? $(tail -n 1 $OUT/san_bwd_$tool.log) ok=$(grep -c ': ok' $OUT/san_bwd_$tool.log)"
done
repo=$PWD
run() {  # tag root cell...
  local tag=$1 root=$(cd "$2" && pwd); shift 2
  local name="$*"
  local f="$OUT/timeline_${tag}_${name// /_}.txt"
  (cd $root && PYTHONPATH=$root FA3LITE_CACHE_DIR=/tmp/fa3c_$tag timeout 40 python3 $repo/tools/call_timeline.py "$@" bwd) >> $f 2>&1
  echo "$tag $* rc=$? $(grep -E 'fa3lite_bwd$' $f | tail -n 2 | tr -s ' ' | tr '\n' '|')"
}
for cell in "64 1024 1" "64 16384 1"; do
  for t in "land _land" "head ." "head ." "land _land"; do run $t $cell; done
done
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 60 python3 tools/det_stress.py --head-dim 64 --runs 20 > $OUT/det_stress.log 2>&1
echo "det_stress rc=$?"; tail -n 3 $OUT/det_stress.log
cd $OUT && tar -czf timelines.tgz timeline_*.txt && rm -f timeline_*.txt
