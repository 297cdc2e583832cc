#!/bin/bash
# Session 27 round 7 (issue 12): the varlen backward's preprocess and postprocess skip the dQ accumulator of the query blocks
# past each sequence's last (padding to max_seqlen_q), against HEAD 82a3b82 (_vh): debug-build varlen,
# features and bwd tests (NaN-poisoned workspace: an unwritten row read anywhere would show);
# varlen_ab bwd in alternation (2 rounds); statistics still written for every padded row (a sink sums them); varlen_gap.
cd "$(dirname "$0")/.."
repo=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export PYTHONUNBUFFERED=1
FA3LITE_DEBUG=1 PYTHONPATH=$repo timeout 330 python3 -m pytest -q -p no:cacheprovider tests/test_varlen_gpu.py \
  tests/test_features_gpu.py tests/test_bwd_gpu.py > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
for r in 1 2; do
  for tree in head=_vh after=.; do
    tag=${tree%%=*}; root=$(cd "${tree#*=}" && pwd)
    (cd $root && FA3LITE_CACHE_DIR=/tmp/fa3c_$tag PYTHONPATH=$root timeout 200 python3 $repo/tools/varlen_ab.py --tag $tag \
      --head-dim 64,128,256 --mode bwd) >> $OUT/ab.jsonl 2>> $OUT/ab.err
  done
done
PYTHONPATH=$repo timeout 150 python3 _vr/varlen_gap.py > $OUT/gap.jsonl 2>> $OUT/ab.err
