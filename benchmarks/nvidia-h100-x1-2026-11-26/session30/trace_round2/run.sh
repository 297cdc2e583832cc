#!/usr/bin/env bash
# Session 30, trace_round2 (issue 8): per-tile phases of the causal forward at 1k (d=64: 128-row
# tiles, d=128) and d=64 causal 16k after the longest-first order and the deferred O read (b454f72).
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
for c in "64 1 1k" "128 1 1k" "64 1 16k" "128 0 16k"; do
  set -- $c
  timeout 100 python3 tools/trace_probe.py --mode fwd --head-dim $1 --causal $2 --seqlen $3 \
    | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); r.pop('by_blocks', None); print(json.dumps(r))" \
    >> $OUT/trace.jsonl 2>> $OUT/err.txt
done
cat $OUT/trace.jsonl
