#!/usr/bin/env bash
# Session 52, call 3. Call 2's ncu (d = 64 causal 1k backward, ours 490 us vs FA4's 415) put ~11% of
# our warp samples in the dK/dV epilogue's copy_out, where dkv_row's Hq / group division ran once per
# 16-byte chunk. Trees: before = _vo (HEAD), after = . (copy_out steps rows from the block's first,
# one division per call), lsemid = _vc (after + the 64-query steps' LSE loads moved behind the dO
# wait, lsemid.diff: at d = 128 full 4k 10% of samples sat on that wait's branch, short scoreboard,
# the probe queued behind the LSE loads).
# 1. Debug build (bounded waits, NaN-poisoned outputs): the backward tests; varlen lengths, GQA,
#    unequal and padded head dims (every copy_out width).
# 2. A/B, 3 rounds, backward d = 64/128/256 at 1k/4k, both masks.
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 130 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_bwd_gpu.py > $OUT/debug_bwd.log 2>&1
echo "debug bwd tests rc=$?"; tail -2 $OUT/debug_bwd.log
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 110 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_varlen_gpu.py tests/test_features_gpu.py -k "lengths or grouped or value_head or padded" > $OUT/debug_features.log 2>&1
echo "debug varlen/feature bwd tests rc=$?"; tail -2 $OUT/debug_features.log
ROOT=$OUT
OUT=$ROOT/bwd AB_TREES="before=_vo after=. lsemid=_vc" timeout 300 bash tools/ab_round.sh 3 --head-dim 64,128,256 \
  --seqlen 1k,4k --mode bwd --soak-ms 200 > $ROOT/ab_bwd.log 2>&1; echo "ab bwd rc=$?"
OUT=$ROOT
cat $OUT/bwd/ab_summary.txt
cd $OUT && tar -czf ab_bwd.tgz bwd && rm -rf bwd
