#!/usr/bin/env bash
# Session 51, call 8: the Q prefetch again, since call 7's traces showed no shorter Q wait (1.14 vs
# 0.89 us causal, 0.96 vs 0.99 full, one traced run each) while call 3's A/B read causal 1k +3.2%
# and 16k -1.8%. Trees: before = _vo (a3a6c4c), after = . (23d1e92); d = 256 forward, causal, 4 rounds.
set -u
export PYTHONUNBUFFERED=1
AB_TREES="before=_vo after=." timeout 200 bash tools/ab_round.sh 4 --head-dim 256 --masks causal \
  --seqlen 1k,4k,16k --mode fwd --soak-ms 200 > $OUT/ab.log 2>&1; echo "ab rc=$?"; cat $OUT/ab_summary.txt
cd $OUT && tar -czf ab.tgz ab.log ab.jsonl ab.err && rm -f ab.log ab.jsonl ab.err
