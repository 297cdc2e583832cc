#!/usr/bin/env bash
# Session 58, call 4 (RESULTS section 58), inline on call 3's warm machine (kernels cached from call
# 3), carry ["_vo", "_vt"]: the row max in four chains against HEAD again where calls 2 and 3 left
# it unclear (d = 64 causal, d = 256): A/B before / tree, forward, d 64 and 256, 3 rounds.
set -u; export PYTHONUNBUFFERED=1; ROOT=$OUT
OUT=$ROOT/ab AB_TREES="before=_vo tree=_vt" timeout 300 bash tools/ab_round.sh 3 --mode fwd --head-dim 64,256 \
  --seqlen 1k,4k,16k --soak-ms 200 > $ROOT/ab.log 2>&1; echo "ab rc=$?"
cat $ROOT/ab/ab_summary.txt
cd $ROOT && tar -czf logs.tgz ab.log ab && rm -rf ab
