#!/bin/bash
# Session 27 round 2 (issue 12): the dense varlen kernel with fixed lengths' tile for max_seqlen_k
# (after) against the short-sequence tile (_va: round 1's persistent kernel), varlen_ab in alternation
# (3 rounds, with the dense comparator); debug-build varlen and kvcache tests; memcheck and racecheck
# over test_many_tiles_per_cta's forward.
cd "$(dirname "$0")/.."
repo=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export PYTHONUNBUFFERED=1
FA3LITE_DEBUG=1 PYTHONPATH=$repo timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_varlen_gpu.py \
  tests/test_kvcache_gpu.py > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
for r in 1 2 3; do
  for tree in short=_va after=.; do
    tag=${tree%%=*}; root=$(cd "${tree#*=}" && pwd)
    (cd $root && FA3LITE_CACHE_DIR=/tmp/fa3c_$tag PYTHONPATH=$root timeout 200 python3 $repo/tools/varlen_ab.py --tag $tag \
      --head-dim 64,128,256) >> $OUT/ab.jsonl 2>> $OUT/ab.err
  done
done
export PYTHONPATH=$repo
for dc in "64 1" "256 1" "128 0"; do
  for tool in memcheck racecheck; do
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 compute-sanitizer --tool $tool python3 _vr/san_varlen.py $dc \
      > $OUT/san.tmp 2>&1; echo "== $tool $dc rc $?" >> $OUT/sanitize.log; tail -4 $OUT/san.tmp >> $OUT/sanitize.log
  done
done
