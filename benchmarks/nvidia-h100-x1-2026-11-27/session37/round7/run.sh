#!/usr/bin/env bash
# Session 37 round7 (issue 8): d=64 causal forward candidates below 2k keys (tiles.py), cuDNN alternating.
cd "$(dirname "$0")/../../../.."
python3 -m pip install -q -e ".[test,bench]" > $OUT/install.log 2>&1
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH FA3LITE_CACHE_DIR=/tmp/fa3c
timeout 400 python3 benchmarks/nvidia-h100-x1-2026-11-27/session37/round7/tiles.py > $OUT/tiles.log 2>&1
echo "rc $?" >> $OUT/tiles.log
