#!/bin/bash
# Session 27 round 9 (issue 9): deterministic backward with a full mask in rotated order (each key
# block walks the query blocks from its own on; turns by arrival), against HEAD (_vh): debug-build
# bwd and varlen tests (bounded turn waits trap), det_stress at 1k and 4k (bitwise repeats, FA3's
# rule), A/B of the deterministic and default backward (tools/ab_round.sh, 2 rounds).
cd "$(dirname "$0")/.."
repo=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export PYTHONUNBUFFERED=1
FA3LITE_DEBUG=1 PYTHONPATH=$repo timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_bwd_gpu.py \
  tests/test_varlen_gpu.py -k "determin or full or varlen or lengths" > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
for s in 1024 4096; do
  PYTHONPATH=$repo timeout 120 python3 tools/det_stress.py --seqlen $s --runs 10 >> $OUT/det_stress.log 2>&1
  echo "det_stress $s rc $?" >> $OUT/det_stress.log
done
OUT=$OUT AB_TREES="head=_vh after=." timeout 200 bash tools/ab_round.sh 2 --head-dim 64,128,256 --seqlen 1k,4k,16k \
  --mode bwd,det > $OUT/ab_round.log 2>&1
