#!/usr/bin/env bash
# Session 37 round1: per-tile phases of the short causal forward (issue 8) and the dense d=256 outlier repro.
cd "$(dirname "$0")/../../../.."
python3 -m pip install -q -e ".[test,bench]" > $OUT/install.log 2>&1
nvidia-smi --query-gpu=name,clocks.sm,power.draw,power.limit --format=csv > $OUT/gpu.txt
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
for c in "64 1 1k" "128 1 1k" "64 0 1k" "64 1 4k"; do
  set -- $c
  echo "== d $1 causal $2 S $3" >> $OUT/trace.txt
  timeout 120 python3 tools/trace_probe.py --mode fwd --head-dim $1 --causal $2 --seqlen $3 >> $OUT/trace.txt 2>> $OUT/err.txt
  echo "rc $?" >> $OUT/trace.txt
done
timeout 200 python3 benchmarks/nvidia-h100-x1-2026-11-27/session37/round1/outlier.py > $OUT/outlier.txt 2>&1
echo "rc $?" >> $OUT/outlier.txt
