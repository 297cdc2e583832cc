#!/usr/bin/env bash
# Session 61, call 3 (prepared; after call2.sh): the backward A/B, 4 trees (make_bwd_trees.sh):
# _vo = HEAD, _vs = the float4 statistics (bwd_stats.diff), _vd = dS^T stored before dV's issue
# (bwd_ds_early.diff), . = both; bwd, d = 64 / 128 / 256, 3 rounds.
set -u
export PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c
AB_TREES="before=_vo stats=_vs dsearly=_vd both=." timeout 500 bash tools/ab_round.sh 3 --mode bwd \
  --head-dim 64,128,256 --seqlen 1k,4k,16k --soak-ms 200 > $OUT/ab.log 2>&1; echo "== ab rc=$?"; tail -n 20 $OUT/ab.log
