#!/usr/bin/env bash
# Session 25, round 3: is the masked (diagonal) block what costs causal CTAs ~2.6 us? Traces with the
# mask path on and off (off: wrong results, timing only), and each CTA's first block timed.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
for c in "bwd 64 1 1k" "bwd 64 0 1k" "bwd 128 1 1k" "bwd 128 0 1k" "fwd 64 1 1k" "fwd 128 1 1k"; do
  set -- $c
  for nm in "" "--nomask"; do
    echo "== $c $nm" >> $OUT/trace.err
    timeout 120 python3 tools/trace_probe.py --mode $1 --head-dim $2 --causal $3 --seqlen $4 $nm >> $OUT/trace.jsonl 2>> $OUT/trace.err
  done
done
python3 - <<'PY'
import json, os
for l in open(os.environ["OUT"] + "/trace.jsonl"):
    r = json.loads(l); r.pop("by_blocks", None); print(json.dumps(r))
PY
