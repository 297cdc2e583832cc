#!/usr/bin/env bash
# Session 40 round2 (FA4 staging call 1 of 3, tools/stage_fa4_parts.sh: the first wheel part to /root/peers): compute-sanitizer
# memcheck and racecheck over tools/race_bwd.py (round1's run lacked PYTHONPATH), then the whole
# release GPU suite on the tree of round1.
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}
bash tools/speed_round.sh peers_part
export PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c PYTHONPATH=$PWD
for tool in memcheck racecheck; do
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 compute-sanitizer --tool $tool --report-api-errors no --print-limit 10 \
    python3 tools/race_bwd.py > $OUT/race_$tool.log 2>&1
  echo "race_bwd $tool rc=$? $(tail -n1 $OUT/race_$tool.log) $(grep -c ': ok' $OUT/race_$tool.log) ok"
done
timeout 420 python3 -m pytest -q -p no:cacheprovider -rf --tb=short --maxfail=10 --durations=5 -m gpu tests > $OUT/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(tail -n1 $OUT/gpu_tests.log)"
grep -E "^FAILED|^ERROR" $OUT/gpu_tests.log | head -20
