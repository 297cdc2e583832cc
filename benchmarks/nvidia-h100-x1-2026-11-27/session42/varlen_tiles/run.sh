#!/usr/bin/env bash
# Session 42 varlen_tiles: the forward's feature rows trail FA4 by 4-5% at D = 64 and 128 (varlen,
# 7 sequences of 677-3970 tokens; section 41's final run), as does our dense kernel at their mean
# length (2341) -- the grid's 1k/4k/16k tiles were never timed at 2-4k. Forward tiles swept on the
# varlen batch and its dense comparator (tools/varlen_ab.py), base = _vo (HEAD) and three trees
# whose FWD_TILES differ at D = 64/128 (persistent everywhere, as the varlen kernel always is):
#   A: 64 full 128x128 pingpong; 64 causal 128x128 serial; 128 no pingpong
#   B: 64 full 192x128 three stages; 64 causal 192x128 pingpong (from 2k keys); 128 128x160 pingpong
#   C: 64 full 192x128 pingpong; 64 causal 128x128 pingpong (from 2k keys); 128 128x176 pingpong
# 3 rounds alternating trees.
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
AB_SCRIPT=tools/varlen_ab.py AB_TREES="base=_vo A=_tA B=_tB C=_tC" timeout 560 bash tools/ab_round.sh 3 \
  --head-dim 64,128 --mode fwd > $OUT/round.log 2>&1
cat $OUT/ab_summary.txt
