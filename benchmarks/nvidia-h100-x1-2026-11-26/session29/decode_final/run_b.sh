#!/usr/bin/env bash
# Session 29, decode_final call 2 of 2: FA4 4.0.0b36 installed, then the full decode grid (issue 13)
# with every implementation (fa3lite, fa3lite+append, SDPA, cuDNN, FA4), tree of c984ef5.
cd "$(dirname "$0")/../../../.."
source .peers/b/install.sh
export PYTHONPATH=$PWD:$PYTHONPATH
timeout 560 python3 -m fa3lite.bench --decode --time-budget 430 --out $OUT/decode > $OUT/decode.log 2>&1; echo "rc $?" >> $OUT/decode.log
tail -5 $OUT/decode.log
