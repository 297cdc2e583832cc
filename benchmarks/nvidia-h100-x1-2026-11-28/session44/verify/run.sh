#!/usr/bin/env bash
# Session 44 verify (FA4 staging call 1 of 3, carry .peers/p1): on cada8cb's kernels (varlen forward
# longest first within a sequence, maps reused per sequence): the debug-build kvcache and property GPU
# tests (maps_round1's debug run passed test_varlen_gpu.py and ran out of time in these), then
# racecheck and synccheck over tools/varlen_sanitize.py --quick (memcheck: maps_round1).
set -u
export PYTHONPATH=$PWD
bash tools/speed_round.sh peers_part > $OUT/peers.log 2>&1
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 300 python3 -m pytest -q -x -p no:cacheprovider \
  tests/test_kvcache_gpu.py tests/test_features_property_gpu.py > $OUT/debug_tests.log 2>&1
echo "debug tests rc=$?" >> $OUT/debug_tests.log
for tool in racecheck synccheck; do
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 90 compute-sanitizer --tool $tool --report-api-errors no \
    python3 tools/varlen_sanitize.py --quick > $OUT/san_$tool.log 2>&1; echo "rc=$?" >> $OUT/san_$tool.log
done
tail -n 3 $OUT/debug_tests.log $OUT/san_*.log $OUT/peers.log
