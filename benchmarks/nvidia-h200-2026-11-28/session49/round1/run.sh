#!/usr/bin/env bash
# Session 49, call 2: O stored from registers where a persistent fixed-length forward has no room for
# sO (config.cuh kDirectO: D = 256), so the next tile's Q loads after the last Q K^T instead of after
# the TMA store has read O out of sQ. Before the call on the CPU: `rm -rf _vo && mkdir _vo && git
# archive 12c5a86 cuda_src fa3lite | tar -x -C _vo`; carry ["_vo"].
#  1. Release build: forward GPU tests, fast-path tests, feature tests at D = 192/256 (padded columns,
#     softcap, sinks, windows).
#  2. A/B before (_vo) / after (.), forward, D = 256, 1k/4k/16k, both masks, 3 rounds.
#  3. Debug build (bounded waits, NaN-poisoned out): the same D = 192/256 tests.
#  4. compute-sanitizer racecheck and memcheck over tools/fwd_sanitize.py.
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 140 python3 -m pytest -q -x -p no:cacheprovider \
  tests/test_fwd_gpu.py tests/test_fastpath_gpu.py > $OUT/release_tests.log 2>&1
echo "release tests rc=$?"; tail -2 $OUT/release_tests.log
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 80 python3 -m pytest -q -x -p no:cacheprovider \
  tests/test_features_gpu.py tests/test_api.py -k "256 or 192 or all_together or without_keys" > $OUT/release_features.log 2>&1
echo "release features rc=$?"; tail -2 $OUT/release_features.log
AB_TREES="before=_vo after=." timeout 170 bash tools/ab_round.sh 3 --head-dim 256 --seqlen 1k,4k,16k \
  --mode fwd --soak-ms 200 > $OUT/ab.log 2>&1; echo "ab rc=$?"; cat $OUT/ab_summary.txt
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 100 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_fwd_gpu.py tests/test_features_gpu.py -k "256 or 192" > $OUT/debug_tests.log 2>&1
echo "debug tests rc=$?"; tail -2 $OUT/debug_tests.log
for tool in racecheck memcheck; do
  PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 50 compute-sanitizer \
    --tool $tool --report-api-errors no python3 tools/fwd_sanitize.py > $OUT/san_$tool.log 2>&1
  echo "fwd_sanitize $tool rc=$? $(tail -n 1 $OUT/san_$tool.log)"
done
cd $OUT && tar -czf round1.tgz ab.log ab.jsonl ab.err && rm -f ab.log ab.jsonl ab.err
