#!/bin/bash
# Session 27 round 8 (issue 12): the varlen backward launched longest first within L2-sized head
# groups (lpt_heads, as fixed lengths; measured without effect in round 3, before the padded blocks
# exited early) against HEAD (_vh): varlen_ab bwd in alternation, 3 rounds; debug varlen tests.
cd "$(dirname "$0")/.."
repo=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export PYTHONUNBUFFERED=1
FA3LITE_DEBUG=1 PYTHONPATH=$repo timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_varlen_gpu.py \
  > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
for r in 1 2 3; do
  for tree in head=_vh after=.; do
    tag=${tree%%=*}; root=$(cd "${tree#*=}" && pwd)
    (cd $root && FA3LITE_CACHE_DIR=/tmp/fa3c_$tag PYTHONPATH=$root timeout 200 python3 $repo/tools/varlen_ab.py --tag $tag \
      --head-dim 64,128,256 --mode bwd) >> $OUT/ab.jsonl 2>> $OUT/ab.err
  done
done
