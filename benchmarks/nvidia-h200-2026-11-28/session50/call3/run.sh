#!/usr/bin/env bash
# Session 50, call 3: call 2 again after its failure (the "after" tree's forward plan set an
# attribute missing from _FwdPlan.__slots__, so every forward there raised; fixed). Carry ["_vo"].
#  1. A/B before (_vo) / after (.), backward default and deterministic, D = 128, 3 rounds.
#  2. Release GPU tests: varlen, features, KV cache, the forward's persistent/D = 256 cases, backward.
#  3. compute-sanitizer racecheck: tools/varlen_sanitize.py at D = 256 with 2 heads; tools/race_bwd.py.
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
export PYTHONUNBUFFERED=1
AB_TREES="before=_vo after=." timeout 200 bash tools/ab_round.sh 3 --head-dim 128 --seqlen 1k,4k,16k \
  --mode bwd,det --soak-ms 200 > $OUT/ab.log 2>&1; echo "ab rc=$?"; cat $OUT/ab_summary.txt; tail -3 $OUT/ab.err
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_after timeout 200 python3 -m pytest -q -x -p no:cacheprovider \
  tests/test_varlen_gpu.py tests/test_features_gpu.py tests/test_kvcache_gpu.py tests/test_bwd_gpu.py \
  "tests/test_fwd_gpu.py::test_persistent_grid_over_many_tiles" > $OUT/release_tests.log 2>&1
echo "release tests rc=$?"; tail -2 $OUT/release_tests.log
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_after PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 80 compute-sanitizer \
  --tool racecheck --report-api-errors no python3 tools/varlen_sanitize.py --head-dims 256 --heads 2 \
  > $OUT/san_varlen_race.log 2>&1
echo "varlen_sanitize racecheck rc=$? $(tail -n 1 $OUT/san_varlen_race.log)"
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_after PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 compute-sanitizer \
  --tool racecheck --report-api-errors no python3 tools/race_bwd.py > $OUT/san_bwd_race.log 2>&1
echo "race_bwd racecheck rc=$? $(tail -n 1 $OUT/san_bwd_race.log)"
cd $OUT && tar -czf ab.tgz ab.log ab.jsonl ab.err && rm -f ab.log ab.jsonl ab.err
