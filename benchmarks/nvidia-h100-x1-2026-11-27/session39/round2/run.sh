#!/usr/bin/env bash
# Session 39 round2: round1 read the D = 256 MHA backward 0.95-0.97x at S = 1k with the head count a
# compile-time 1 (the grouped walk's runtime count before, 0745234 = _vo). Re-measured with the
# bench's timing (tools/ab_time.py: inputs rotated past L2, 200 ms soak), the new tree first in each
# round, 3 rounds; D = 64 MHA (the same kernel code in both trees) as the noise control.
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}
python3 -m pip install -q -e ".[test,bench]" > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
AB_TREES="after=. before=_vo" bash tools/ab_round.sh 3 --head-dim 64,128,256 --seqlen 1k,4k --mode bwd --soak-ms 200 > $OUT/round.log 2>&1
cat $OUT/ab_summary.txt
