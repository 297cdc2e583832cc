#!/bin/bash
# Session 27 round 5 (issues 12, 9): the varlen forward writes the rows of no sequence itself (out and
# lse unfilled), and the varlen backward's padded key blocks exit before any set-up, against HEAD
# 736cef6 (_vh): varlen_ab fwd and bwd in alternation (3 rounds); varlen_gap (mixed / equal / padded
# lengths); debug-build varlen, kvcache and features tests; memcheck over test_many_tiles_per_cta.
cd "$(dirname "$0")/.."
repo=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export PYTHONUNBUFFERED=1
FA3LITE_DEBUG=1 PYTHONPATH=$repo timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_varlen_gpu.py \
  tests/test_kvcache_gpu.py tests/test_features_gpu.py > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
for r in 1 2 3; do
  for tree in head=_vh after=.; do
    tag=${tree%%=*}; root=$(cd "${tree#*=}" && pwd)
    for mode in fwd bwd; do
      (cd $root && FA3LITE_CACHE_DIR=/tmp/fa3c_$tag PYTHONPATH=$root timeout 200 python3 $repo/tools/varlen_ab.py --tag $tag \
        --head-dim 64,128,256 --mode $mode) >> $OUT/ab.jsonl 2>> $OUT/ab.err
    done
  done
done
PYTHONPATH=$repo timeout 200 python3 _vr/varlen_gap.py > $OUT/gap.jsonl 2>> $OUT/ab.err
PYTORCH_NO_CUDA_MEMORY_CACHING=1 PYTHONPATH=$repo timeout 240 compute-sanitizer --tool memcheck --report-api-errors no \
  python3 -m pytest -q -p no:cacheprovider tests/test_varlen_gpu.py -k many_tiles > $OUT/memcheck.log 2>&1
echo "rc $?" >> $OUT/memcheck.log
