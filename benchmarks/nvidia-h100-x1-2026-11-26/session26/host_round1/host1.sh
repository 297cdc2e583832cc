#!/bin/bash
# Host-time round 1 (issue 10): lower bound of a Python node around the plans, and the current split.
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
git rev-parse HEAD >> $OUT/gpu.txt 2>/dev/null
export PYTHONPATH=$PWD:$PYTHONPATH
{
timeout 300 python3 tools/host_ideal.py --out $OUT/host_ideal.json
echo "===== host_split --split"
true
} > $OUT/host1.log 2>&1
