#!/usr/bin/env bash
# Session 48, host call: the bench's host-time table with SDPA-style entries timed on (B, H, S, d)
# views made once (fa3lite.bench.impls.Bound.torch_layout), fa3lite and cuDNN, three processes; then
# release GPU tests of the fast path, the forward and the bench.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
for r in 1 2 3; do
  timeout 150 python3 -m fa3lite.bench --quick --head-dim 128 --seqlen 1k --mode fwd --impl fa3lite,cudnn \
    --no-compile-time --no-plots --no-features --out /tmp/bench_$r > $OUT/bench_$r.log 2>&1
  echo "== bench $r rc=$?"; grep -A9 "Host time per call" $OUT/bench_$r.log
done
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fastpath_gpu.py tests/test_fwd_gpu.py \
  tests/test_bench.py tests/test_bench_features.py > $OUT/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(tail -n 1 $OUT/gpu_tests.log)"
