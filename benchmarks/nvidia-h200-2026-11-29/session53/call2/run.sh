#!/usr/bin/env bash
# Session 53, call 2: the persistent backward. racecheck and synccheck over tools/race_bwd.py with
# FA3LITE_BWD_MAX_CTAS=2 (every layout, GQA walk, varlen, deterministic: CTAs walking many tiles);
# then A/B, 3 rounds, before = _vo (HEAD: one CTA per tile) vs after = . (persistent), backward
# d = 64/128/256 at 1k/4k/16k, both masks.
set -u
export PYTHONUNBUFFERED=1
for tool in racecheck synccheck; do
  PYTHONPATH=$PWD FA3LITE_BWD_MAX_CTAS=2 FA3LITE_CACHE_DIR=/tmp/fa3c PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 120 \
    compute-sanitizer --tool $tool --report-api-errors no python3 tools/race_bwd.py > $OUT/san_bwd_$tool.log 2>&1
  echo "race_bwd $tool rc=$? $(tail -n 1 $OUT/san_bwd_$tool.log) ok=$(grep -c ': ok' $OUT/san_bwd_$tool.log)"
done
ROOT=$OUT
OUT=$ROOT/bwd AB_TREES="before=_vo after=." timeout 330 bash tools/ab_round.sh 3 --head-dim 64,128,256 \
  --seqlen 1k,4k,16k --mode bwd --soak-ms 200 > $ROOT/ab_bwd.log 2>&1; echo "ab bwd rc=$?"
OUT=$ROOT
cat $OUT/bwd/ab_summary.txt
cd $OUT && tar -czf ab_bwd.tgz bwd && rm -rf bwd
