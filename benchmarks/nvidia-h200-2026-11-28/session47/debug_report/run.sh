#!/usr/bin/env bash
# Session 47: the debug build's report of a wait that gives up (cuda_src/ptx/debug.cuh,
# fa3lite/runtime/debug.py). (1) the new GPU test and the PTX tests; (2) whether the old build's
# device printf survives its trap (292f9f1 = _vo, with this tree's ptx_tests.cu); (3) debug-build
# forward and deterministic backward tests, so every debug module goes through debug.attach.
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 150 python3 -m pytest -q -p no:cacheprovider -rA \
  tests/test_ptx.py > $OUT/ptx.log 2>&1
echo "ptx rc=$? $(tail -n 1 $OUT/ptx.log)"; grep -E "debug_wait" $OUT/ptx.log | head -3
cp cuda_src/tests/ptx_tests.cu _vo/cuda_src/tests/
PYTHONPATH=$PWD/_vo FA3LITE_CACHE_DIR=/tmp/fa3c_old timeout 150 python3 \
  benchmarks/nvidia-h200-2026-11-28/session47/debug_report/printf_check.py > $OUT/printf_old.log 2> $OUT/printf_old.err
echo "printf_check rc=$?"; cat $OUT/printf_old.log; grep -c "timed out" $OUT/printf_old.log $OUT/printf_old.err
for sel in "tests/test_fwd_gpu.py -k causal" "tests/test_bwd_gpu.py -k determin"; do
  PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 100 python3 -m pytest -q -x -p no:cacheprovider \
    $sel >> $OUT/debug_tests.log 2>&1
  echo "debug $sel rc=$? $(tail -n 1 $OUT/debug_tests.log)"
done
# Second call (run2 below), after gmem::st_v4 / gmem::fence_system replaced debug.cuh's own wrappers:
#   PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 150 python3 -m pytest -q -p no:cacheprovider -rA tests/test_ptx.py
