#!/usr/bin/env bash
# Session 37 round6 (issue 13): the decode bench's quick preset and host table on the landed tree
# (one split per key block at B=1 1k, lse in the workspace); no FA4 staged.
set -u
python3 -m pip install -q -e ".[test,bench]" > $OUT/install.log 2>&1
mkdir -p $OUT/decode
timeout 300 python3 -m fa3lite.bench --decode-quick --no-plots --out $OUT/decode > $OUT/decode.log 2>&1
echo "rc $?" >> $OUT/decode.log
