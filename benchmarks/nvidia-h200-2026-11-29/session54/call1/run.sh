#!/usr/bin/env bash
# Session 53's prepared call: the persistent backward with a dynamic tile order
# (persistent_dynamic.diff; RESULTS section 53). Set up on the CPU side first:
#   git apply benchmarks/nvidia-h200-2026-11-29/session53/next_round/persistent_dynamic.diff
#   rm -rf _vo && mkdir _vo && git archive HEAD cuda_src fa3lite | tar -x -C _vo
# then run this with carry ["_vo"]. ~450 s.
# 1. Debug build (bounded waits, NaN-poisoned outputs): backward tests (they include
#    test_persistent_ctas_walk_many_tiles, 3 CTAs), the same whole file with FA3LITE_BWD_MAX_CTAS=3.
# 2. racecheck over tools/race_bwd.py with the cap at 2.
# 3. Main kernel per tree (call_timeline), d = 64 / 128, full / causal, 1k, then d = 128 causal 4k.
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 130 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_bwd_gpu.py > $OUT/debug_bwd.log 2>&1
echo "debug bwd tests rc=$?"; tail -1 $OUT/debug_bwd.log
PYTHONPATH=$PWD FA3LITE_BWD_MAX_CTAS=3 FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 100 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_bwd_gpu.py > $OUT/debug_bwd_cap3.log 2>&1
echo "debug bwd tests, 3 CTAs rc=$?"; tail -1 $OUT/debug_bwd_cap3.log
PYTHONPATH=$PWD FA3LITE_BWD_MAX_CTAS=2 FA3LITE_CACHE_DIR=/tmp/fa3c PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 120 \
  compute-sanitizer --tool racecheck --report-api-errors no python3 tools/race_bwd.py > $OUT/san_bwd_racecheck.log 2>&1
echo "race_bwd racecheck rc=$? $(tail -n 1 $OUT/san_bwd_racecheck.log) ok=$(grep -c ': ok' $OUT/san_bwd_racecheck.log)"
repo=$PWD
for cell in "64 1024 0" "64 1024 1" "128 1024 0" "128 1024 1" "128 4096 1"; do
  for pair in head=_vo dynamic=.; do
    tag=${pair%%=*}; root=$(cd "${pair#*=}" && pwd)
    f="$OUT/timeline_${tag}_${cell// /_}.txt"
    (cd $root && PYTHONPATH=$root FA3LITE_CACHE_DIR=/tmp/fa3c_$tag timeout 60 python3 $repo/tools/call_timeline.py $cell bwd) > $f 2>&1
    echo "$tag $cell rc=$? $(grep -E 'fa3lite_bwd$|TFLOP' $f | tr -s ' ' | tr '\n' '|')"
  done
done
cd $OUT && tar -czf timelines.tgz timeline_*.txt && rm -f timeline_*.txt
