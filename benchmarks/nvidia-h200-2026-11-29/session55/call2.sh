#!/usr/bin/env bash
# Session 55, call 2 of 4 (carry _land, .peers/p2): FA4's second part staged; A/B of the varlen diff
# (land = _land, walk = .): the D = 64 varlen backward on the bench's 7-sequence batch (3 rounds) and
# on 64 sequences of 256 tokens (2 rounds); the dense D = 64 backward (its producer's tile body moved
# into load_tile), 1k and 16k, 2 rounds.
set -u
export PYTHONUNBUFFERED=1
bash tools/speed_round.sh peers_part
ROOT=$OUT
short=$(python3 -c "print(','.join(['256'] * 64))")
OUT=$ROOT/varlen AB_SCRIPT=tools/varlen_ab.py AB_TREES="land=_land walk=." timeout 130 bash tools/ab_round.sh 3 \
  --head-dim 64 --mode bwd --soak-ms 200 > $ROOT/ab_varlen.log 2>&1; echo "ab varlen rc=$?"
OUT=$ROOT/varlen_short AB_SCRIPT=tools/varlen_ab.py AB_TREES="land=_land walk=." timeout 90 bash tools/ab_round.sh 2 \
  --head-dim 64 --mode bwd --soak-ms 200 --lengths $short > $ROOT/ab_varlen_short.log 2>&1; echo "ab varlen short rc=$?"
OUT=$ROOT/dense AB_TREES="land=_land walk=." timeout 100 bash tools/ab_round.sh 2 --head-dim 64 \
  --seqlen 1k,16k --mode bwd --soak-ms 200 > $ROOT/ab_dense.log 2>&1; echo "ab dense rc=$?"
OUT=$ROOT
for d in varlen varlen_short dense; do cat $OUT/$d/ab_summary.txt; done
cd $OUT && tar -czf logs.tgz ab_*.log varlen varlen_short dense && rm -rf varlen varlen_short dense
