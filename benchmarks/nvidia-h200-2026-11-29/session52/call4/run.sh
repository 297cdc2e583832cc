#!/usr/bin/env bash
# Session 52, call 4: call 3's A/B read the copy_out change (tree ".") at
# 0.962 in d = 64 causal 4k (every round below "before") and 0.997-1.026 elsewhere. Again, 4 rounds,
# before = _vo (HEAD before it) vs after = ., d = 64 and 128, 1k/4k/16k, both masks; then
# memcheck over tools/race_bwd.py (every backward layout, GQA walk, varlen) for the new addressing.
set -u
export PYTHONUNBUFFERED=1
ROOT=$OUT
OUT=$ROOT/bwd AB_TREES="before=_vo after=." timeout 330 bash tools/ab_round.sh 4 --head-dim 64,128 \
  --seqlen 1k,4k,16k --mode bwd --soak-ms 200 > $ROOT/ab_bwd.log 2>&1; echo "ab bwd rc=$?"
OUT=$ROOT
cat $OUT/bwd/ab_summary.txt
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer \
  --tool memcheck --report-api-errors no python3 tools/race_bwd.py > $OUT/memcheck_bwd.log 2>&1
echo "race_bwd memcheck rc=$? $(tail -n 1 $OUT/memcheck_bwd.log)"; grep -c ": ok" $OUT/memcheck_bwd.log
cd $OUT && tar -czf ab_bwd.tgz bwd && rm -rf bwd
