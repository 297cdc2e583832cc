#!/usr/bin/env bash
# Session 41 dq_round1: D = 64 backward (128-query steps) with two dQ buffers (two writer warps,
# alternate query blocks), one dS^T buffer and two Q/dO stages, in place of one dQ buffer and three
# stages. ncu_round2: 6.5% of the samples on the dQ tile's stores waiting for the writer to free the
# one buffer. First the debug build's D = 64 backward tests (bounded waits, NaN-poisoned buffers),
# then A/B: before = _vo (HEAD), after = this tree, 3 rounds.
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 240 python3 -m pytest -q -x tests/test_bwd_gpu.py \
  -k "64 and not 256" > $OUT/debug_tests.log 2>&1
echo "== debug tests rc=$?"; tail -2 $OUT/debug_tests.log
AB_TREES="before=_vo after=." timeout 330 bash tools/ab_round.sh 3 --head-dim 64 --seqlen 1k,4k,16k \
  --mode bwd,det --soak-ms 200 > $OUT/round.log 2>&1
cat $OUT/ab_summary.txt
