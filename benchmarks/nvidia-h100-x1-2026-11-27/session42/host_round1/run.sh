#!/usr/bin/env bash
# Session 42 host_round1: where the training step's host time goes today (issue 10). Section 41's
# host table read fa3lite's fwd_bwd 426 vs cuDNN's 384 us, bench_check's 398 vs 306, while section 26
# had 0.96-1.08x. tools/host_split.py (whole steps interleaved; then --split: the backward node's body
# and the functions inside it) and tools/host_ideal.py (the least a Python node around the two launch
# plans costs), B=1, S=128, H=16, d=128, bf16.
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
python3 -c "import fa3lite, torch; print(torch.__version__)" > $OUT/env.txt 2>&1
timeout 200 python3 tools/host_split.py --out $OUT/split.json > $OUT/split.log 2>&1; echo "== split rc=$?"; cat $OUT/split.log
timeout 200 python3 tools/host_split.py --split --out $OUT/split_body.json > $OUT/split_body.log 2>&1; echo "== split body rc=$?"; cat $OUT/split_body.log
timeout 150 python3 tools/host_ideal.py --out $OUT/ideal.json > $OUT/ideal.log 2>&1; echo "== ideal rc=$?"; cat $OUT/ideal.log
