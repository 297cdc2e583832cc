#!/usr/bin/env bash
# Session 52 call 6: tools-free timeline of one forward call beside its kernel (timeline.py), at the
# cell where ncu put our kernel ahead of FA4's but the bench did not (d = 256 causal 1k), and at
# d = 64 causal 1k.
set -u
export PYTHONUNBUFFERED=1
for c in "256 1024 1" "64 1024 1" "128 1024 0"; do
  echo "== $c"
  PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 90 python3 benchmarks/nvidia-h200-2026-11-29/session52/call6/timeline.py $c 2>&1 | tee -a $OUT/timeline.log
done
