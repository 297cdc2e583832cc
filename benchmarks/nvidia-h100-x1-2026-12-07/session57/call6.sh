#!/usr/bin/env bash
# Session 57, call 6: ncu of the forward cell furthest behind FA4 in call 5 (d = 128 full 16k, 0.957;
# one case to fit the device time left): SOL metrics, then stall samples per SASS instruction
# (tools/speed_round.sh ncu; read on the CPU with tools/ncu_stalls.py).
NCU_CASES="fwd 128 16384 0 fa3lite" timeout 150 bash tools/speed_round.sh ncu
cat $OUT/ncu_metrics.txt | grep -v "^==PROF==" | tail -40
