#!/usr/bin/env bash
# Session 43 race: compute-sanitizer racecheck over tools/race_bwd.py on f9f9a07's kernels (each role
# makes its tile after setmaxnreg; D > 128 producers with 32 registers). A plain run first compiles
# the kernels into the cache, so the sanitized run spends its time in the kernels.
set -u
export PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c
timeout 60 python3 tools/race_bwd.py > $OUT/plain.log 2>&1; echo "plain rc=$? $(grep -c ': ok' $OUT/plain.log) ok"
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --tool racecheck --report-api-errors no \
  python3 tools/race_bwd.py > $OUT/race_racecheck.log 2>&1
echo "racecheck rc=$? $(tail -n1 $OUT/race_racecheck.log) $(grep -c ': ok' $OUT/race_racecheck.log) ok"
# The two calls after it, on the same warm machine (cache kept):
#   PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 120 compute-sanitizer --tool memcheck --report-api-errors no python3 tools/race_bwd.py
#   PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 compute-sanitizer --tool synccheck --report-api-errors no python3 tools/race_bwd.py
