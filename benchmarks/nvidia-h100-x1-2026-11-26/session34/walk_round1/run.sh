#!/usr/bin/env bash
# Session 34: is the rotated walk worth it per head dim? Full-mask backward on three trees (_vo:
# 4b42acd, before this session; _vp: 0ab8ab1, claims on the plain walk; .: claims on the rotated walk),
# 3 rounds; then the release GPU tests the turns round's 150 s limit cut (fast path, features).
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
AB_TREES="before=_vo plain=_vp rotated=." OUT=$OUT bash tools/ab_round.sh 3 --mode bwd --head-dim 64,128 \
  --seqlen 1k,4k,16k --masks full
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_fastpath_gpu.py tests/test_features_gpu.py \
  > "$OUT/tests.log" 2>&1
echo "== tests rc=$? $(tail -n 1 "$OUT/tests.log")"
