#!/usr/bin/env bash
# Session 43 tile_round1. Two backward changes, A/B against HEAD (10e1a03):
#  stats = _vs: the row statistics' loads from one opaque address register (smem_vec::opaque), so
#          ptxas folds each load's offset into LDS [R+imm]; the compiler had turned the adds into ORs
#          and ptxas spent a LOP3 per load. D = 64 main loop 688 -> 655 SASS instructions.
#  after = this tree: stats, plus each role makes its tile after setmaxnreg and the D > 128 producer
#          warpgroup gets 32 registers (consumers 232): NVRTC 13.5.37 spilled 44-68 bytes in the
#          D = 256 causal backward (13.0.88, the device's, did not), which fails the CPU SASS checks.
# 3 rounds, bwd and deterministic bwd, d 64/128/256, 200 ms soak; then the debug-build backward,
# varlen and feature GPU tests on this tree.
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
AB_TREES="before=_vo stats=_vs after=." timeout 330 bash tools/ab_round.sh 3 --head-dim 64,128,256 \
  --seqlen 1k,4k,16k --mode bwd,det --soak-ms 200 > $OUT/round.log 2>&1
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 250 python3 -m pytest -q -x -p no:cacheprovider \
  tests/test_bwd_gpu.py tests/test_varlen_gpu.py tests/test_features_gpu.py > $OUT/debug_tests.log 2>&1
echo "debug tests rc=$?" >> $OUT/debug_tests.log
tail -3 $OUT/debug_tests.log
cat $OUT/ab_summary.txt
