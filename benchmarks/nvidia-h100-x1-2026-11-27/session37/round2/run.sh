#!/usr/bin/env bash
# Session 37 round2 (issue 13): split counts of short B=1 decode steps (the heuristic's MIN_BLOCKS
# floor), then the decode grid on the current tree (no FA4 staged: SDPA and cuDNN as peers).
cd "$(dirname "$0")/../../../.."
python3 -m pip install -q -e ".[test,bench]" > $OUT/install.log 2>&1
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
timeout 200 python3 tools/decode_probe.py sweep --shapes 1x1024,1x2048,1x4096,1x8192,8x1024 \
  --out $OUT/sweep.json > $OUT/sweep.log 2>&1; echo "rc $?" >> $OUT/sweep.log
mkdir -p $OUT/decode
timeout 360 python3 -m fa3lite.bench --decode --time-budget 300 --no-plots --out $OUT/decode \
  > $OUT/decode.log 2>&1; echo "rc $?" >> $OUT/decode.log
