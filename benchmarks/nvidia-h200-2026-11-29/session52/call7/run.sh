#!/usr/bin/env bash
# Session 52, call 7. (1) The per-CTA trace of the d = 64 causal 1k backward on HEAD (section 51:
# epilogue 1.66 us before copy_out lost its per-chunk division). (2) The causal backward launched in
# FA4's order -- a head's key blocks adjacent, key block fastest (lpt_heads = 0, nolpt.diff) --
# against HEAD's longest-first groups: call2's ncu put FA4's d = 64 causal 1k main kernel 18% ahead,
# with a grid in that order. 4 rounds, causal, d = 64/128/256, 1k/4k/16k.
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 60 python3 tools/trace_probe.py --mode bwd --head-dim 64 \
  --causal 1 --seqlen 1k > $OUT/trace_bwd.txt 2>&1; echo "trace bwd rc=$?"; tail -n 25 $OUT/trace_bwd.txt
ROOT=$OUT
OUT=$ROOT/bwd AB_TREES="before=. nolpt=_vn" timeout 250 bash tools/ab_round.sh 4 --head-dim 64,128,256 \
  --seqlen 1k,4k,16k --mode bwd --masks causal --soak-ms 200 > $ROOT/ab_bwd.log 2>&1; echo "ab bwd rc=$?"
OUT=$ROOT
cat $OUT/bwd/ab_summary.txt
cd $OUT && tar -czf ab_bwd.tgz bwd && rm -rf bwd
