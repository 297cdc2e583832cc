#!/usr/bin/env bash
# Session 44 tile64_round1. The varlen forward at d = 64 causal takes the tile of the batch's longest
# key range (3970 keys: 192 x 128, three consumer warpgroups, overlap), while dense d = 64 causal
# below 2048 keys runs 128 x 128 serial; in features_fa4 varlen d = 64 causal read 0.94x FA4. Trees:
# base = this tree (cada8cb); t128s = _vts: 128 x 128 serial (dense's short tile); t128o = _vto:
# 128 x 128 with overlap and pingpong (the softcap tile). The bench's batch, d = 64 causal, 3 rounds.
set -u
export PYTHONPATH=$PWD
AB_SCRIPT=tools/varlen_ab.py AB_TREES="base=. t128s=_vts t128o=_vto" timeout 170 bash tools/ab_round.sh 3 \
  --head-dim 64 --masks causal --repeats 3 --soak-ms 200 > $OUT/round.log 2>&1
cat $OUT/ab_summary.txt
