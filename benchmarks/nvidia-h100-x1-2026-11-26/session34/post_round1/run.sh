#!/usr/bin/env bash
# Session 34: the walk rule (rotated only for 128-query steps over <= 16 query blocks) and the
# postprocess's last-first order, against f5990d4 (_vp: every narrow full mask rotated, first-first
# postprocess), 3 rounds; release backward tests at D <= 128 (the debug build's ran on the walk
# before, unchanged since in the kernels but for the order of the postprocess's blocks); then FA4's
# first wheel part staged for the final bench.
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
AB_TREES="head=_vp after=." OUT=$OUT bash tools/ab_round.sh 3 --mode bwd --head-dim 64,128 --seqlen 1k,4k
FA3LITE_DEBUG=1 timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_bwd_gpu.py -k "not 256 and not 192 and not 4224 and (partial or poisoned or full)" \
  > "$OUT/debug_tests.log" 2>&1
echo "== debug rc=$? $(tail -n 1 "$OUT/debug_tests.log")"
mkdir -p /root/peers && cp .peers/a/* /root/peers/ && echo "== FA4 part a staged"
