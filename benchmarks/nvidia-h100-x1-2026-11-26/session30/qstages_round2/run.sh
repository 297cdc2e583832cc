#!/usr/bin/env bash
# Session 30, qstages_round2: the overlapped mainloop's P.V wait in an always-taken branch on the row
# sums (every warp of a warpgroup runs the same wait: synccheck's "mismatching warpgroup instruction
# pc" at d=64 causal 400 x 701, present since the lazy rescale, f606f84 too: sync_round1), the tile
# counter held until its launch is queued (memcheck), two Q buffers (qstages_round1). Debug-build
# forward tests, synccheck / racecheck / memcheck over tools/fwd_sanitize.py, 4 alternating A/B
# rounds against fa34869 (_vp).
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
FA3LITE_DEBUG=1 timeout 240 python3 -m pytest -q -x -p no:cacheprovider tests/test_fwd_gpu.py tests/test_features_gpu.py \
  tests/test_fwd_property_gpu.py -k "not bwd and not backward and not grad" > $OUT/tests_debug.log 2>&1
echo "rc $?" >> $OUT/tests_debug.log
tail -2 $OUT/tests_debug.log
for tool in synccheck racecheck memcheck; do
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --tool $tool --report-api-errors no \
    python3 tools/fwd_sanitize.py > $OUT/san_$tool.log 2>&1
  echo "$tool rc $?: $(tail -1 $OUT/san_$tool.log)"
done
AB_TREES="before=_vp after=." OUT=$OUT bash tools/ab_round.sh 4 --mode fwd --head-dim 64,128,256 --seqlen 1k,4k,16k
