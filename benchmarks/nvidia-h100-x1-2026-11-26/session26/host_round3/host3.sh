#!/bin/bash
# Host-time round 3 (issue 10): launch ways, ctypes launch candidate, the backward body split.
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export PYTHONPATH=$PWD:$PYTHONPATH
{
echo "===== launch_ab"
timeout 200 python3 tools/launch_ab.py
echo "===== host_ideal"
timeout 200 python3 tools/host_ideal.py --out $OUT/host_ideal.json
echo "===== host_split --split"
timeout 200 python3 tools/host_split.py --split --rounds 9
} > $OUT/host3.log 2>&1
