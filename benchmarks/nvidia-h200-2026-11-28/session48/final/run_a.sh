#!/usr/bin/env bash
# Session 48 final run, call 1 of 3 back to back on one warm H200 (carry .peers/p1): FA4's first part
# staged; the forward A/B of round1 again (V one block behind K in overlapped variants), before
# (_vo: 2aedc21's cuda_src and fa3lite, made here by reversing since_2aedc21.diff, as FA4's part and a
# copy of the old tree do not fit in one call's carry) / after (.), 4 more rounds.
set -u
bash tools/speed_round.sh peers_part
rm -rf _vo && mkdir _vo && cp -r cuda_src fa3lite _vo/ && (cd _vo && patch -s -R -p1 < ../benchmarks/nvidia-h200-2026-11-28/session48/final/since_2aedc21.diff) || exit 1
export PYTHONUNBUFFERED=1
AB_TREES="before=_vo after=." timeout 240 bash tools/ab_round.sh 4 --head-dim 64,128,256 --seqlen 1k,4k,16k \
  --mode fwd --soak-ms 200 > $OUT/ab.log 2>&1; echo "ab rc=$?"; cat $OUT/ab_summary.txt
cd $OUT && tar -czf ab.tgz ab.log ab.jsonl ab.err && rm -f ab.log ab.jsonl ab.err
