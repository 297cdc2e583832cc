#!/usr/bin/env bash
# Session 46 final run, call 1 of 3 back to back on one warm H200 (carry .peers/p1): FA4's first part
# staged; the training step's host time (tools/host_split.py, 2 processes, B=1 S=128 H=16 d=128).
set -u
bash tools/speed_round.sh peers_part
export FA3LITE_CACHE_DIR=/tmp/fa3c PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
for i in 1 2; do
  timeout 120 python3 tools/host_split.py --rounds 9 --out $OUT/host_$i.json > $OUT/host_$i.log 2>&1
  echo "host $i rc=$?"; grep -E '"(fa3lite|cudnn)' $OUT/host_$i.json | head -8
done
