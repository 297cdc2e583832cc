#!/usr/bin/env bash
# Session 30, lpt_round1 (issue 8): causal forward tiles longest first within groups of heads whose
# K/V fit in L2 (scheduler.cuh tile_of, lpt_heads), against 131f6bc (_vp, head by head). Debug-build
# forward tests with masks (causal, windows, the persistent grid), then 3 alternating A/B rounds of
# the forward (tools/ab_round.sh), full masks as the control.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
FA3LITE_DEBUG=1 timeout 240 python3 -m pytest -q -x -p no:cacheprovider tests/test_fwd_gpu.py tests/test_features_gpu.py \
  -k "causal or window or persistent or offset" > $OUT/tests_debug.log 2>&1
echo "rc $?" >> $OUT/tests_debug.log
tail -3 $OUT/tests_debug.log
AB_TREES="before=_vp after=." OUT=$OUT bash tools/ab_round.sh 3 --mode fwd --head-dim 64,128,256 --seqlen 1k,4k,16k
