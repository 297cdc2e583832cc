#!/usr/bin/env bash
# Session 30, qstages_round1 (issue 8): two Q buffers in the persistent fixed-length forward (d=64,
# 96, 128 with their own O buffer): the producer loads a tile's Q before its K/V, while the consumers
# still finish the previous tile. Debug-build forward tests, racecheck / synccheck / memcheck over
# tools/fwd_sanitize.py, a trace of the causal 1k cells, then 4 alternating A/B rounds of the forward
# against fa34869 (_vp).
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
FA3LITE_DEBUG=1 timeout 240 python3 -m pytest -q -x -p no:cacheprovider tests/test_fwd_gpu.py tests/test_features_gpu.py \
  tests/test_fwd_property_gpu.py -k "not bwd and not backward and not grad" > $OUT/tests_debug.log 2>&1
echo "rc $?" >> $OUT/tests_debug.log
tail -2 $OUT/tests_debug.log
for tool in racecheck synccheck memcheck; do
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --tool $tool --report-api-errors no \
    python3 tools/fwd_sanitize.py > $OUT/san_$tool.log 2>&1
  echo "$tool rc $?: $(tail -1 $OUT/san_$tool.log)"
done
for c in "64 1 1k" "128 1 1k"; do
  set -- $c
  timeout 100 python3 tools/trace_probe.py --mode fwd --head-dim $1 --causal $2 --seqlen $3 \
    | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); r.pop('by_blocks', None); print(json.dumps(r))" \
    >> $OUT/trace.jsonl 2>&1
done
cat $OUT/trace.jsonl
AB_TREES="before=_vp after=." OUT=$OUT bash tools/ab_round.sh 4 --mode fwd --head-dim 64,128,256 --seqlen 1k,4k,16k
