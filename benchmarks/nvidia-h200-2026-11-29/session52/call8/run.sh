#!/usr/bin/env bash
# Session 52 call 8: the backward's kernels per call at 1k (preprocess, main, postprocess), cold and
# soaked: how much of a short backward lies outside the main kernel (timeline.py ... bwd).
set -u
export PYTHONUNBUFFERED=1
for c in "64 1024 1 bwd" "64 1024 0 bwd" "128 1024 1 bwd" "64 4096 1 bwd"; do
  echo "== $c"
  PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 60 python3 benchmarks/nvidia-h200-2026-11-29/session52/call8/timeline.py $c 2>&1 | grep -v -i warn | tee -a $OUT/timeline.log
done
