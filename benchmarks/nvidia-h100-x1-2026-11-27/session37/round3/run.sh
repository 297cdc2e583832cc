#!/usr/bin/env bash
# Session 37 round3 (issue 13): MIN_BLOCKS 1 (hopper/splits.py): the heuristic's pick at B=1 1k, and
# where two splits stop paying at B=8 (2k-8k) and B=64 1k; then the release kv-cache GPU tests.
cd "$(dirname "$0")/../../../.."
python3 -m pip install -q -e ".[test,bench]" > $OUT/install.log 2>&1
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
timeout 240 python3 tools/decode_probe.py sweep --shapes 1x1024,8x2048,8x4096,8x8192,64x1024 \
  --out $OUT/sweep.json > $OUT/sweep.log 2>&1; echo "rc $?" >> $OUT/sweep.log
timeout 300 python3 -m pytest -q tests/test_kvcache_gpu.py tests/test_kvcache.py > $OUT/tests.log 2>&1
echo "rc $?" >> $OUT/tests.log
