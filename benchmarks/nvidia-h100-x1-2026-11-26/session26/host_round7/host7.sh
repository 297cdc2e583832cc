#!/bin/bash
# Host-time round 7 (issues 10, 13): SDPA gradients made in torch's layout; kv-cache decode host profile;
# release tests of the fast paths.
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export PYTHONPATH=$PWD:$PYTHONPATH
{
echo "===== host_ideal"
timeout 200 python3 tools/host_ideal.py --out $OUT/host_ideal.json
echo "===== decode_probe host"
timeout 200 python3 tools/decode_probe.py host
} > $OUT/host7.log 2>&1
timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_fastpath_gpu.py tests/test_training_gpu.py \
  tests/test_stress_gpu.py > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log
