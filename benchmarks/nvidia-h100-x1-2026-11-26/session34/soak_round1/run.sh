#!/usr/bin/env bash
# Session 34: the final runs read D = 128 full at 16k 3-4% slower than session 33 while FA4 and cuDNN
# held. Soaked A/B (200 ms of the same call before each batch, as the bench) of the backward: _vo
# (4b42acd, before this session), . (51f4781: claims, plain walk at D = 128), _vl (the same with the
# ticket taken once the tile is ready instead of when the writer starts the block).
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
AB_TREES="before=_vo now=. late=_vl" OUT=$OUT/d128 bash tools/ab_round.sh 2 --mode bwd --head-dim 128 \
  --masks full,causal --seqlen 1k,4k,16k --soak-ms 200
AB_TREES="before=_vo now=. late=_vl" OUT=$OUT/d64 bash tools/ab_round.sh 2 --mode bwd --head-dim 64 \
  --masks full --seqlen 1k,16k --soak-ms 200
