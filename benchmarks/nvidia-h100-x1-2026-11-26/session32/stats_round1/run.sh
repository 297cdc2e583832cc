#!/usr/bin/env bash
# Session 32, stats_round1: the backward's LSE/dPsum rows in the consumers' order (bwd_stats.cuh: per
# run of 32 queries each thread quad's values contiguous, two LDS.128 where four LDS.64 were; the
# preprocess writes them so), A/B vs HEAD (_vp), 3 rounds, bwd d=64/128/256 at 1k/4k/16k both masks;
# then release GPU tests of the backward, varlen, features (softcap, sinks) and training, and a
# debug-build backward pass.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
OUT=$OUT AB_TREES="head=_vp stats=." timeout 300 bash tools/ab_round.sh 3 --head-dim 64,128,256 --seqlen 1k,4k,16k --mode bwd
timeout 220 python3 -m pytest -q -p no:cacheprovider tests/test_bwd_gpu.py tests/test_varlen_gpu.py \
  tests/test_features_gpu.py tests/test_training_gpu.py > $OUT/tests_release.log 2>&1
echo "tests rc $?" >> $OUT/tests_release.log
tail -3 $OUT/tests_release.log
FA3LITE_DEBUG=1 timeout 60 python3 -m pytest -q -x -p no:cacheprovider tests/test_bwd_gpu.py -k "causal" > $OUT/tests_debug.log 2>&1
echo "rc $?" >> $OUT/tests_debug.log
tail -2 $OUT/tests_debug.log
