#!/usr/bin/env bash
# Session 54, call 3: the dynamic persistent backward with the walking rule (bwd.py walks_tiles: head
# dim 64 always, wider heads only at query lengths <= 2048, one CTA per tile otherwise). A/B, 3 rounds,
# before = _vo (HEAD) vs after = . , backward d = 128/256 at 1k/2k/4k/16k, both masks: 1k/2k walk,
# 4k/16k run the new kernel one CTA per tile (does the loop's code itself cost there?).
set -u
export PYTHONUNBUFFERED=1
ROOT=$OUT
OUT=$ROOT/bwd AB_TREES="before=_vo after=." timeout 400 bash tools/ab_round.sh 3 --head-dim 128,256 \
  --seqlen 1k,2k,4k,16k --mode bwd --soak-ms 200 > $ROOT/ab_bwd.log 2>&1; echo "ab bwd rc=$?"
OUT=$ROOT
cat $OUT/bwd/ab_summary.txt
cd $OUT && tar -czf ab_bwd.tgz bwd && rm -rf bwd
