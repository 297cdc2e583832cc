#!/usr/bin/env bash
# Prepared in session 47, not run: hunt the one cudaErrorIllegalInstruction of session47/ab (debug
# build, test_window_skips_key_blocks after 293 forward/varlen/feature tests). The same test files in
# the same order, twice, debug build, each kernel's illegal instruction dumped by the driver
# (CUDA_ENABLE_COREDUMP_ON_EXCEPTION: the dump names the kernel and the faulting PC; read it with
# cuda-gdb where the device has it), and the launch that faults named by CUDA_LAUNCH_BLOCKING=1.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg
for i in 1 2; do
  CUDA_LAUNCH_BLOCKING=1 CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_COREDUMP_FILE=$OUT/core_$i \
    timeout 280 python3 -m pytest -q -x -p no:cacheprovider tests/test_fwd_gpu.py tests/test_varlen_gpu.py \
    tests/test_features_gpu.py tests/test_kvcache_gpu.py > $OUT/debug_$i.log 2>&1
  echo "round $i rc=$? $(tail -n 1 $OUT/debug_$i.log)"
done
ls -la $OUT; which cuda-gdb && for c in $OUT/core_*; do
  timeout 60 cuda-gdb -batch -ex "target cudacore $c" -ex "info cuda kernels" -ex "x/4i \$pc" > $c.txt 2>&1; done
