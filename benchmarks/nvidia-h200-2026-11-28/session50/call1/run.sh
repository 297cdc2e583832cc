#!/usr/bin/env bash
# Prepared in session 49, not run: kDirectO for the persistent varlen forward too (D = 256 and padded
# D = 192: O from registers at its packed rows, so the next tile's Q loads under the epilogue instead
# of after the copy out of sQ), as c0216ef did for fixed lengths (+2..4% at 1k/4k there).
# Before the call on the CPU: `rm -rf _vo && mkdir _vo && git archive HEAD cuda_src fa3lite | tar -x -C
# _vo` (before), then `git apply benchmarks/nvidia-h200-2026-11-28/session49/next_round/varlen_direct_o.diff`
# in the working tree (after); carry ["_vo"]. Compiled in session 49 (NVRTC 13.5): every varlen
# D = 192/256 variant 0 spills, 0 stack. test_compile's varlen SASS branch holds as it is.
#  1. Release and debug-build varlen, feature and KV-cache GPU tests (guard bands with NaN neighbours).
#  2. compute-sanitizer racecheck and memcheck over tools/varlen_sanitize.py.
#  3. A/B before (_vo) / after (.), tools/varlen_ab.py, D = 256, both masks, 4 rounds, 200 ms soak.
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 150 python3 -m pytest -q -x -p no:cacheprovider \
  tests/test_varlen_gpu.py tests/test_features_gpu.py tests/test_kvcache_gpu.py > $OUT/release_tests.log 2>&1
echo "release tests rc=$?"; tail -2 $OUT/release_tests.log
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 150 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_varlen_gpu.py -k "256 or 192" > $OUT/debug_tests.log 2>&1
echo "debug tests rc=$?"; tail -2 $OUT/debug_tests.log
for tool in racecheck memcheck; do
  PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 60 compute-sanitizer \
    --tool $tool --report-api-errors no python3 tools/varlen_sanitize.py > $OUT/san_$tool.log 2>&1
  echo "varlen_sanitize $tool rc=$? $(tail -n 1 $OUT/san_$tool.log)"
done
AB_SCRIPT=tools/varlen_ab.py AB_TREES="before=_vo after=." timeout 200 bash tools/ab_round.sh 4 --head-dim 256 \
  --soak-ms 200 > $OUT/ab.log 2>&1; echo "ab rc=$?"; cat $OUT/ab_summary.txt
