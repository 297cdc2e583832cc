#!/usr/bin/env bash
# Next round, call 5, on a working tree with fwd_p_double.diff applied (`git apply
# benchmarks/nvidia-h100-x1-2026-12-07/session59/next_round/fwd_p_double.diff`) and HEAD's code in _vo
# (`mkdir _vo && git archive HEAD cuda_src fa3lite | tar -x -C _vo`; carry ["_vo"]): the forward with
# two P buffers (P packed between the exp2s, before the P.V wait). Debug forward tests (bounded waits,
# NaN-poisoned outputs; odd and even block counts), release varlen + feature tests, then A/B against
# HEAD at d = 128 / 256 (d = 64's three warpgroups keep one buffer), 3 rounds.
set -u
ROOT=$OUT
OUT=$ROOT/debug DEBUG_LIMIT=170 DEBUG_TESTS=tests/test_fwd_gpu.py DEBUG_K="" bash tools/speed_round.sh debug
export PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c
timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/test_varlen_gpu.py tests/test_features_gpu.py \
  > $ROOT/varlen_features.log 2>&1; echo "== varlen/features rc=$? $(tail -n 1 $ROOT/varlen_features.log)"
OUT=$ROOT AB_TREES="before=_vo pb=." timeout 240 bash tools/ab_round.sh 3 --mode fwd --head-dim 128,256 \
  --seqlen 1k,4k,16k --soak-ms 200 > $ROOT/ab.log 2>&1; echo "== ab rc=$?"; tail -n 30 $ROOT/ab.log
