#!/bin/bash
# Session 27 round 1 (issue 12): the persistent varlen forward (kVarlenTiles: real tiles claimed from
# a counter) against one CTA per padded tile (_vb = HEAD 762ae80): ncu of both at d=64 causal, the
# varlen_ab A/B (3 rounds, trees alternating, with the dense comparator), the debug-build varlen tests first.
cd "$(dirname "$0")/.."
repo=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export PYTHONUNBUFFERED=1
FA3LITE_DEBUG=1 PYTHONPATH=$repo timeout 280 python3 -m pytest -q -p no:cacheprovider tests/test_varlen_gpu.py \
  > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
for r in 1 2 3; do
  for tree in before=_vb after=.; do
    tag=${tree%%=*}; root=$(cd "${tree#*=}" && pwd)
    (cd $root && FA3LITE_CACHE_DIR=/tmp/fa3c_$tag PYTHONPATH=$root timeout 200 python3 $repo/tools/varlen_ab.py --tag $tag \
      --head-dim 64,128,256) >> $OUT/ab.jsonl 2>> $OUT/ab.err
  done
done
for tree in before=_vb after=.; do
  tag=${tree%%=*}; root=$(cd "${tree#*=}" && pwd)
  for dc in "64 1"; do
    (cd $root && FA3LITE_CACHE_DIR=/tmp/fa3c_$tag PYTHONPATH=$root timeout 120 ncu --clock-control none -k regex:fa3lite_fwd \
      --launch-skip 2 --launch-count 1 --section SpeedOfLight --section LaunchStats --section Occupancy \
      --section SchedulerStats --section WarpStateStats python3 $repo/_vr/ncu_varlen.py $dc) >> $OUT/ncu_$tag.txt 2>&1
  done
done
