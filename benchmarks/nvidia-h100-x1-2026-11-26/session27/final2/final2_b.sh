#!/bin/bash
# Session 27 final round 2, call 2 (call 1 copied .peers/a to /root/peers), after the rotated
# deterministic order: FA4 4.0.0b36 installed; the bf16 grid with FA4, the deterministic rows, the
# feature rows and the host table; then the release backward and training tests and the debug-build
# (bounded waits) deterministic and full-mask backward tests.
cd "$(dirname "$0")/../../../.."
source .peers/b/install.sh > $OUT/install.log 2>&1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
timeout 330 python3 -m fa3lite.bench --mode fwd,bwd --head-dim 64,128,256 --causal both --seqlen 1k,4k,16k \
  --deterministic --impl fa3lite,cudnn,fa4 --no-compile-time --no-plots --time-budget 300 --out $OUT/bf16 \
  > $OUT/bf16.log 2>&1
echo "bench rc $?" >> $OUT/bf16.log
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_bwd_gpu.py tests/test_training_gpu.py \
  > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log
FA3LITE_DEBUG=1 timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_bwd_gpu.py tests/test_varlen_gpu.py \
  -k "determin or full" > $OUT/tests_debug.log 2>&1; echo "tests rc $?" >> $OUT/tests_debug.log
