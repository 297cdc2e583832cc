#!/usr/bin/env bash
# Session 48 final run, call 2 of 3 (carry .peers/p2): FA4's second part staged; d = 128 full forward
# with three K/V stages (O staged in sQ) against today's two (with its own O buffer), interleaved with
# cuDNN, 200 ms soak, at 4k and 16k.
set -u
bash tools/speed_round.sh peers_part
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 300 python3 tools/fwd_tune.py 128 --full --interleave \
  --soak-ms=200 --seqlen=4096,16384 '--tiles=128,128,2,1,1,1;128,128,2,1,1,0;128,128,3,1,1,0;128,128,3,1,0,0' \
  > $OUT/tune.log 2>&1; echo "tune rc=$?"; tail -n 20 $OUT/tune.log
