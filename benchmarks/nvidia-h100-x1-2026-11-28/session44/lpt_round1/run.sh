#!/usr/bin/env bash
# Session 44 lpt_round1. The varlen forward on the persistent grid claimed a causal batch's tiles
# sequence by sequence, head by head (each head longest first), so its last claims were the last
# sequence's last heads' longest tiles. Now each sequence's tiles go longest first within groups of
# heads sized to L2 (launch_order.cuh, as the dense causal grid). A/B against HEAD (_vo):
#  1. the bench's batch (7 sequences, 16k tokens), causal, d 64/128/256, 3 rounds, 200 ms soak;
#  2. the same lengths ascending (the longest sequence last), d = 128, 2 rounds;
#  3. the debug-build varlen GPU tests on this tree.
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
AB_SCRIPT=tools/varlen_ab.py AB_TREES="before=_vo after=." timeout 300 bash tools/ab_round.sh 3 \
  --head-dim 64,128,256 --masks causal --repeats 3 --soak-ms 200 > $OUT/round.log 2>&1
mkdir -p $OUT/ascending
OUT=$OUT/ascending AB_SCRIPT=tools/varlen_ab.py AB_TREES="before=_vo after=." timeout 120 bash tools/ab_round.sh 2 \
  --head-dim 128 --masks causal --repeats 3 --soak-ms 200 --lengths 677,1572,2089,2226,2234,3616,3970 \
  > $OUT/ascending/round.log 2>&1
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 150 python3 -m pytest -q -x -p no:cacheprovider \
  tests/test_varlen_gpu.py > $OUT/debug_tests.log 2>&1
echo "debug tests rc=$?" >> $OUT/debug_tests.log
tail -3 $OUT/debug_tests.log
cat $OUT/ab_summary.txt $OUT/ascending/ab_summary.txt
