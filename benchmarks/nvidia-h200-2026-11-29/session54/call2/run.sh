#!/usr/bin/env bash
# Session 54, call 2: the dynamic persistent backward (session53/next_round/persistent_dynamic.diff).
# 1. Debug build, varlen and feature tests with FA3LITE_BWD_MAX_CTAS=3 (GQA walk, softcap, windows,
#    padded dims, dQ-only / dK/dV-only; varlen keeps one CTA per tile, the rest walk many tiles).
# 2. synccheck over tools/race_bwd.py with the cap at 2 (call 1 ran racecheck).
# 3. A/B, 2 rounds, before = _vo (HEAD) vs after = . (dynamic persistent), backward
#    d = 64/128/256 at 1k/4k/16k, both masks.
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD FA3LITE_BWD_MAX_CTAS=3 FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 230 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_varlen_gpu.py tests/test_features_gpu.py > $OUT/debug_features_cap3.log 2>&1
echo "debug varlen/feature tests, 3 CTAs rc=$?"; tail -2 $OUT/debug_features_cap3.log
PYTHONPATH=$PWD FA3LITE_BWD_MAX_CTAS=2 FA3LITE_CACHE_DIR=/tmp/fa3c PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 90 \
  compute-sanitizer --tool synccheck --report-api-errors no python3 tools/race_bwd.py > $OUT/san_bwd_synccheck.log 2>&1
echo "race_bwd synccheck rc=$? $(tail -n 1 $OUT/san_bwd_synccheck.log) ok=$(grep -c ': ok' $OUT/san_bwd_synccheck.log)"
ROOT=$OUT
OUT=$ROOT/bwd AB_TREES="before=_vo after=." timeout 250 bash tools/ab_round.sh 2 --head-dim 64,128,256 \
  --seqlen 1k,4k,16k --mode bwd --soak-ms 200 > $ROOT/ab_bwd.log 2>&1; echo "ab bwd rc=$?"
OUT=$ROOT
cat $OUT/bwd/ab_summary.txt
cd $OUT && tar -czf ab_bwd.tgz bwd && rm -rf bwd
