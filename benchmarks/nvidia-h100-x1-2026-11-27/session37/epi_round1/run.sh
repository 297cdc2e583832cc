#!/usr/bin/env bash
# Session 37 epi_round1 (issue 8): the forward's per-tile fixed costs. LSE's global stores after the O
# staging's fence (ptxas makes it a MEMBAR.ALL.CTA, which waited for them) and the next tile decoded
# before the epilogue. Debug-build forward tests (bounded waits, NaN-poisoned outputs) first; then A/B
# against _vo (the tree before, git archive of HEAD), 4 rounds alternating, forward only.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q -e ".[test,bench]" > $OUT/install.log 2>&1
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3d FA3LITE_DEBUG=1 timeout 150 python3 -m pytest -q -p no:cacheprovider -rf \
  --tb=short tests/test_fwd_gpu.py tests/test_varlen_gpu.py -x > "$OUT/debug.log" 2>&1
echo "== debug fwd+varlen rc=$? $(tail -n 1 "$OUT/debug.log")"
AB_TREES="before=_vo after=." OUT=$OUT timeout 330 bash tools/ab_round.sh 4 --mode fwd --head-dim 64,128,256 \
  --seqlen 512,1k,4k --masks full,causal --soak-ms 100 > "$OUT/ab.log" 2>&1
tail -30 "$OUT/ab_summary.txt"
