#!/bin/bash
# Host-time round 6 (issue 10): empty_like grads, one Python call a launch; interleaved bench host table;
# cProfile of the training step on the calling thread.
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export PYTHONPATH=$PWD:$PYTHONPATH
{
echo "===== host_ideal"
timeout 200 python3 tools/host_ideal.py --out $OUT/host_ideal.json
echo "===== bench host table (interleaved)"
timeout 300 python3 -m fa3lite.bench --mode fwd --head-dim 128 --causal false --seqlen 1k --impl fa3lite,cudnn \
  --no-compile-time --no-plots --no-features --no-odd-check --out $OUT/bench 2>&1 | tail -12
echo "===== host_autograd_profile"
timeout 200 python3 tools/host_autograd_profile.py
} > $OUT/host6.log 2>&1
rm -f $OUT/bench/*.csv
