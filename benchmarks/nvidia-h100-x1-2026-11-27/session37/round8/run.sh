#!/usr/bin/env bash
# Session 37 round8 (issue 13): split counts at B = 2 and 4 (16 and 32 tiles), short to mid caches:
# where does splitting stop paying once the unsplit tiles cover a quarter of the SMs or more?
cd "$(dirname "$0")/../../../.."
python3 -m pip install -q -e ".[test,bench]" > $OUT/install.log 2>&1
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
timeout 200 python3 tools/decode_probe.py sweep --shapes 2x1024,2x4096,4x1024,4x2048,4x4096,4x8192 \
  --out $OUT/sweep.json > $OUT/sweep.log 2>&1; echo "rc $?" >> $OUT/sweep.log
