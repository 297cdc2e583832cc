#!/usr/bin/env bash
# Session 30, handoff_round1 (issue 8): the persistent forward's tile hand-off with one full barrier
# per consumer warpgroup (none waits for another to take its next tile; pingpong's offset survives
# the tile boundary), taken right after the mainloop so the slot's load runs under the epilogue.
# Debug-build forward / varlen tests, traces of the causal 1k cells, then 4 alternating A/B rounds
# of the forward against b454f72 (_vp).
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
FA3LITE_DEBUG=1 timeout 300 python3 -m pytest -q -x -p no:cacheprovider tests/test_fwd_gpu.py tests/test_features_gpu.py \
  tests/test_varlen_gpu.py -k "not bwd and not backward and not grad" > $OUT/tests_debug.log 2>&1
echo "rc $?" >> $OUT/tests_debug.log
tail -3 $OUT/tests_debug.log
for c in "64 1 1k" "128 1 1k"; do
  set -- $c
  timeout 100 python3 tools/trace_probe.py --mode fwd --head-dim $1 --causal $2 --seqlen $3 \
    | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); r.pop('by_blocks', None); print(json.dumps(r))" \
    >> $OUT/trace.jsonl 2>> $OUT/trace_err.txt
done
cat $OUT/trace.jsonl
AB_TREES="before=_vp after=." OUT=$OUT bash tools/ab_round.sh 4 --mode fwd --head-dim 64,128,256 --seqlen 1k,4k,16k
