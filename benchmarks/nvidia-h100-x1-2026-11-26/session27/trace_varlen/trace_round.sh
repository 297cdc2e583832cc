#!/bin/bash
# Session 27: per-tile (forward) and per-CTA (backward) traces, fixed lengths vs the same batch packed
# as varlen (7 x 2341 tokens, equal lengths): where a varlen unit loses time.
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for args in "fwd 64 0" "fwd 128 0" "fwd 64 1" "bwd 128 1" "bwd 64 0"; do
  set -- $args
  for vl in "" "--varlen"; do
    timeout 120 python3 tools/trace_probe.py --mode $1 --head-dim $2 --causal $3 --seqlen 2341 $vl >> $OUT/trace.jsonl 2>> $OUT/trace.err
  done
done
