#!/usr/bin/env bash
# Session 30, trace_round1 (issue 8): per-tile phases of the d=64 forward (192 x 128 persistent tile)
# with full and causal masks at 16k and causal at 4k: where a causal tile's extra time goes.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
for c in "0 16k" "1 16k" "1 4k" "0 4k"; do
  set -- $c
  timeout 100 python3 tools/trace_probe.py --mode fwd --head-dim 64 --causal $1 --seqlen $2 \
    --out $OUT/fwd64_c$1_$2.npy >> $OUT/trace.jsonl 2> $OUT/err_c$1_$2.txt
  echo "rc $? causal $1 S $2" >> $OUT/trace.jsonl
done
cat $OUT/trace.jsonl
