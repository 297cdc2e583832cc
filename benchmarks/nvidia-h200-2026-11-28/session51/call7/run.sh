#!/usr/bin/env bash
# Session 51, call 7 (after the final run): the PTX wrapper tests on the GPU (ptx_test_tma_load now
# prefetches its 4-D and 5-D boxes into L2 before loading them), and call 2's d = 256 forward traces
# again on 977c282 (the Q prefetch), to see the wait for Q at a tile's start.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_ptx.py > $OUT/ptx.log 2>&1
echo "ptx tests rc=$? $(tail -n 1 $OUT/ptx.log)"
for c in 1 0; do
  timeout 60 python3 tools/trace_probe.py --mode fwd --head-dim 256 --causal $c --seqlen 1k >> $OUT/trace.jsonl 2>> $OUT/trace.err
  echo "trace d=256 causal=$c rc=$?"
done
