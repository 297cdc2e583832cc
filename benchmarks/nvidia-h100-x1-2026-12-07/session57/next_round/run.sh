#!/usr/bin/env bash
# Prepared in session 57 (RESULTS section 57, "The forward's row max in four chains, prepared"): the
# online softmax's row max reduced in four independent FMNMX chains per row instead of one
# (fwd_max_tree.diff; same instruction count, chain depth 34 -> 12 in the d = 128 main loop).
# Set-up on the CPU side (project root, diff not yet applied):
#   rm -rf _vo && mkdir _vo && git archive HEAD cuda_src fa3lite | tar -x -C _vo
#   git apply benchmarks/nvidia-h100-x1-2026-12-07/session57/next_round/fwd_max_tree.diff
#   (CPU check: python3 -m pytest -q tests/test_compile.py -k "fwd_variant or longest")
# Then one call, carry ["_vo"], `bash <this>` (~400 s expected; the steps' limits add up to 550 s):
#   1. debug build (bounded waits, NaN-poisoned outputs): every forward test, then the varlen,
#      feature and kv-cache tests that run the same softmax
#   2. A/B before (_vo) / tree (.), forward, d 64 / 128 / 256, full and causal, 1k / 4k / 16k, 3 rounds
# Land it if no cell reads below 0.99 and the 16k cells gain; the outputs are the same bits (the max is
# exact), so the release tests are the debug ones above.
set -u
export PYTHONUNBUFFERED=1
ROOT=$OUT
OUT=$ROOT/debug DEBUG_LIMIT=150 DEBUG_TESTS=tests/test_fwd_gpu.py DEBUG_K="" bash tools/speed_round.sh debug
OUT=$ROOT/debug_features DEBUG_LIMIT=100 DEBUG_K="" \
  DEBUG_TESTS="tests/test_varlen_gpu.py tests/test_features_gpu.py tests/test_kvcache_gpu.py" bash tools/speed_round.sh debug
OUT=$ROOT/ab AB_TREES="before=_vo tree=." timeout 300 bash tools/ab_round.sh 3 --mode fwd --head-dim 64,128,256 \
  --seqlen 1k,4k,16k --soak-ms 200 > $ROOT/ab.log 2>&1; echo "ab rc=$?"
cat $ROOT/ab/ab_summary.txt
cd $ROOT && tar -czf logs.tgz ab.log ab debug debug_features && rm -rf ab debug debug_features
