#!/usr/bin/env bash
# Session 33: the forward's lowest cell (d=64 causal 1k, 0.91 of cuDNN) under ncu beside cuDNN's
# kernel (metrics and warp-state samples per SASS line), and the per-tile trace of ours.
set -u
OUT=${OUT:-/tmp/out}
NCU_CASES="fwd 64 1024 1 fa3lite;fwd 64 1024 1 cudnn" NCU_KERNELS='regex:fa3lite_fwd$|cudnn_generated.*fprop' \
  bash tools/speed_round.sh ncu
PYTHONPATH=$PWD timeout 120 python3 tools/trace_probe.py --mode fwd --head-dim 64 --causal 1 --seqlen 1k \
  > "$OUT/trace_fwd64c1k.json" 2> "$OUT/trace.err"; echo "== trace rc=$?"
head -c 1500 "$OUT/trace_fwd64c1k.json"
