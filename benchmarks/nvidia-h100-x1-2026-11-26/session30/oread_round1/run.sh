#!/usr/bin/env bash
# Session 30, oread_round1 (issue 8): with its own sO, the epilogue's storing thread waits for the TMA
# engine to have read O only before staging the next tile's O (and before exit), not right after the
# store, so the warpgroup starts its next tile's GEMMs while the store runs. Debug-build forward
# tests, then 4 alternating A/B rounds of the forward against 40a6a1c (_vp).
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
FA3LITE_DEBUG=1 timeout 300 python3 -m pytest -q -x -p no:cacheprovider tests/test_fwd_gpu.py tests/test_features_gpu.py \
  tests/test_fwd_property_gpu.py > $OUT/tests_debug.log 2>&1
echo "rc $?" >> $OUT/tests_debug.log
tail -3 $OUT/tests_debug.log
AB_TREES="before=_vp after=." OUT=$OUT bash tools/ab_round.sh 4 --mode fwd --head-dim 64,128,256 --seqlen 1k,4k,16k
