#!/bin/bash
# Host-time round 12 (issue 10): the interleaved host table and host_ideal after the SDPA torch-layout gradients.
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export PYTHONPATH=$PWD:$PYTHONPATH
{
echo "===== host_ideal"
timeout 200 python3 tools/host_ideal.py --out $OUT/host_ideal.json
for i in 1 2; do
echo "===== bench host table (interleaved), run $i"
timeout 300 python3 -m fa3lite.bench --mode fwd --head-dim 128 --causal false --seqlen 1k --impl fa3lite,cudnn \
  --no-compile-time --no-plots --no-features --no-odd-check --out $OUT/bench$i 2>&1 | grep -A8 "^Host time"
done
} > $OUT/host12.log 2>&1
rm -f $OUT/bench*/*.csv
