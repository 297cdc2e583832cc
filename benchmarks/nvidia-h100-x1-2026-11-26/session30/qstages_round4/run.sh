#!/usr/bin/env bash
# Session 30, qstages_round4: the always-taken branch's condition on the row offsets (known before the
# exp2s) instead of the row sums (which waited for the last exp2: -3% in qstages_round3). synccheck /
# racecheck over tools/fwd_sanitize.py, debug-build forward tests, then 6 alternating rounds of
# fa34869 (_vp), two Q buffers with the old per-warp-vote wait (_vq), this tree.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
for tool in synccheck racecheck; do
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --tool $tool --report-api-errors no \
    python3 tools/fwd_sanitize.py > $OUT/san_$tool.log 2>&1
  echo "$tool rc $?: $(tail -1 $OUT/san_$tool.log)"
done
FA3LITE_DEBUG=1 timeout 240 python3 -m pytest -q -x -p no:cacheprovider tests/test_fwd_gpu.py tests/test_features_gpu.py \
  -k "not bwd and not backward and not grad" > $OUT/tests_debug.log 2>&1
echo "rc $?" >> $OUT/tests_debug.log
tail -2 $OUT/tests_debug.log
AB_TREES="before=_vp qbuf=_vq after=." OUT=$OUT bash tools/ab_round.sh 6 --mode fwd --head-dim 64,128,256 --seqlen 1k,4k,16k
