#!/bin/bash
# The full decode grid with the append kernel (issue 13): fa3lite, fa3lite+append, SDPA, cuDNN (no FA4 staged).
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export PYTHONPATH=$PWD:$PYTHONPATH
timeout 420 python3 -m fa3lite.bench --decode --impl fa3lite,fa3lite_append,sdpa,cudnn --time-budget 330 \
  --out $OUT/decode > $OUT/decode.log 2>&1
echo "rc $?" >> $OUT/decode.log
rm -f $OUT/decode/*.csv
