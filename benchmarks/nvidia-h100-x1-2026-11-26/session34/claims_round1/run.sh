#!/usr/bin/env bash
# Session 34, call 1: dQ claims (cuda_src/attention/bwd_dq.cuh; the accumulator is not zeroed, each
# query block's first tile is stored). The PTX claim test; the debug build (NaN-poisoned buffers,
# bounded waits) over the backward tests at D <= 128; an A/B of the backward against HEAD (_vp: git
# archive of the commit before); release backward, varlen and training tests.
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_ptx.py -k "bulk" > "$OUT/ptx.log" 2>&1
echo "== ptx rc=$? $(tail -n 1 "$OUT/ptx.log")"
FA3LITE_DEBUG=1 timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/test_bwd_gpu.py \
  -k "not 256 and not 192 and not 4224" > "$OUT/debug_bwd.log" 2>&1
echo "== debug bwd rc=$? $(tail -n 1 "$OUT/debug_bwd.log")"
AB_TREES="head=_vp after=." OUT=$OUT bash tools/ab_round.sh 3 --mode bwd --head-dim 64,128 --seqlen 1k,4k
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_bwd_gpu.py tests/test_varlen_gpu.py \
  tests/test_training_gpu.py > "$OUT/tests.log" 2>&1
echo "== tests rc=$? $(tail -n 1 "$OUT/tests.log")"
