#!/usr/bin/env bash
# Session 50, call 2. Carry ["_vo"] (HEAD 2005530's cuda_src and fa3lite). The tree ("."): the
# varlen forward with kDirectO (session 49's prepared diff), the kDirectO plan without an O map, and
# the narrow backward at 64-query steps releasing a block's stage after the next block's S^T wait
# (bwd_consumer.cuh kReleaseInNextStep: the block's dV/dK wgmmas are not waited for at its end).
#  1. A/B before (_vo) / after (.), backward default and deterministic, D = 128, 3 rounds.
#  2. Debug build (bounded mbarrier waits, NaN-poisoned buffers): backward tests at D = 128/96.
#  3. compute-sanitizer racecheck over tools/varlen_sanitize.py at D = 256 (call 1 timed out on all
#     head dims) and over tools/race_bwd.py.
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
export PYTHONUNBUFFERED=1
AB_TREES="before=_vo after=." timeout 250 bash tools/ab_round.sh 3 --head-dim 128 --seqlen 1k,4k,16k \
  --mode bwd,det --soak-ms 200 > $OUT/ab.log 2>&1; echo "ab rc=$?"; cat $OUT/ab_summary.txt
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 150 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_bwd_gpu.py -k "128 or 96" > $OUT/debug_bwd.log 2>&1
echo "debug bwd tests rc=$?"; tail -2 $OUT/debug_bwd.log
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 90 compute-sanitizer \
  --tool racecheck --report-api-errors no python3 tools/varlen_sanitize.py --head-dims 256 > $OUT/san_varlen_race.log 2>&1
echo "varlen_sanitize racecheck rc=$? $(tail -n 1 $OUT/san_varlen_race.log)"
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 90 compute-sanitizer \
  --tool racecheck --report-api-errors no python3 tools/race_bwd.py > $OUT/san_bwd_race.log 2>&1
echo "race_bwd racecheck rc=$? $(tail -n 1 $OUT/san_bwd_race.log)"
cd $OUT && tar -czf ab.tgz ab.log ab.jsonl ab.err && rm -f ab.log ab.jsonl ab.err
