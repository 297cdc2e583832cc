#!/usr/bin/env bash
# Session 56, call 1 (one call: the device was scarce, each failed start cost 90-180 s): the folded
# dQ (session 55's next_round, rebased on 1013c06) on the device for the first time.
#   1. debug build (bounded waits, NaN-poisoned dq): the backward tests, test_folded_dq among them
#   2. A/B before (_vo = HEAD) / fold (_fold, count-down right after the adds; fold_dq_rebased.diff less its pipelining) / pipe (. = count-down
#      one visit later), backward at d = 64, 1k / 4k / 16k, full and causal, 3 rounds
#   3. racecheck over tools/race_bwd.py with 2 CTAs
# then FA4's part 1 into /root/peers (tools/speed_round.sh peers_part), when carried.
set -u
export PYTHONUNBUFFERED=1
ROOT=$OUT
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 150 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_bwd_gpu.py > $ROOT/debug_bwd.log 2>&1
echo "debug bwd tests rc=$? $(tail -n 1 $ROOT/debug_bwd.log)"
OUT=$ROOT/ab AB_TREES="before=_vo fold=_fold pipe=." timeout 240 bash tools/ab_round.sh 3 --head-dim 64 \
  --seqlen 1k,4k,16k --mode bwd --soak-ms 200 > $ROOT/ab.log 2>&1; echo "ab rc=$?"
cat $ROOT/ab/ab_summary.txt
PYTHONPATH=$PWD FA3LITE_BWD_MAX_CTAS=2 FA3LITE_CACHE_DIR=/tmp/fa3c PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 \
  compute-sanitizer --tool racecheck --report-api-errors no python3 tools/race_bwd.py > $ROOT/san_bwd_racecheck.log 2>&1
echo "race_bwd racecheck rc=$? $(tail -n 1 $ROOT/san_bwd_racecheck.log) ok=$(grep -c ': ok' $ROOT/san_bwd_racecheck.log)"
ls .peers/p*/big.* > /dev/null 2>&1 && bash tools/speed_round.sh peers_part
cd $ROOT && tar -czf logs1.tgz ab.log ab && rm -rf ab
