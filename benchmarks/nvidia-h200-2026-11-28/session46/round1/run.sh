#!/usr/bin/env bash
# Session 46 round1 (carry _vo = git archive of eda73b9): the D = 96/128 backward with three Q/dO
# stages and one dQ buffer (session45/next_round/bwd128_three_stages.diff, applied to this tree).
#  1. A/B before (_vo) / after (.), bwd and deterministic, d = 128, 1k/4k/16k, both masks, 3 rounds.
#  2. Debug build (bounded mbarrier waits, NaN-poisoned buffers): the backward GPU tests at D = 96/128.
#  3. compute-sanitizer racecheck and synccheck over tools/race_bwd.py (every backward layout).
set -u
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
export PYTHONUNBUFFERED=1
AB_TREES="before=_vo after=." timeout 260 bash tools/ab_round.sh 3 --head-dim 128 --seqlen 1k,4k,16k \
  --mode bwd,det --soak-ms 200 > $OUT/ab.log 2>&1; echo "ab rc=$?"; cat $OUT/ab_summary.txt
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 150 python3 -m pytest -q -x -p no:cacheprovider \
  tests/test_bwd_gpu.py -k "128 or 96" > $OUT/debug_tests.log 2>&1
echo "debug tests rc=$?"; tail -2 $OUT/debug_tests.log
export FA3LITE_CACHE_DIR=/tmp/fa3c_after
for tool in racecheck synccheck; do
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 compute-sanitizer --tool $tool --report-api-errors no \
    python3 tools/race_bwd.py > $OUT/race_$tool.log 2>&1
  echo "race_bwd $tool rc=$? $(tail -n 1 $OUT/race_$tool.log)"
done
