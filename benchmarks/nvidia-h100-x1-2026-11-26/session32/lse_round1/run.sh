#!/usr/bin/env bash
# Session 32, lse_round1: the backward's dO wait before the LSE loads (waits_round1: dO had always
# landed; the wait's probe queued behind the LSE loads) -- tree "." -- and additionally dPsum loaded
# with the LSE at 64-query steps (_vq), A/B vs HEAD (_vp), 3 rounds, bwd at d=64/128; then debug-build
# backward tests of tree ".".
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
OUT=$OUT AB_TREES="head=_vp lse=. dps=_vq" timeout 380 bash tools/ab_round.sh 3 --head-dim 64,128 --seqlen 1k,4k,16k --mode bwd
FA3LITE_DEBUG=1 timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/test_bwd_gpu.py -k "64 or 128" > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
tail -2 $OUT/tests_debug.log
