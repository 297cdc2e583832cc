#!/usr/bin/env bash
# Session 52 call 2c (after ncu_fa4_a.sh / ncu_fa4_b.sh of session51/next_round with .peers/p1, p2):
# carry .peers/p3 installs FA4; tools/speed_round.sh's ncu step for ours and FA4's main kernels at
# d = 256 causal 1k forward, d = 128 full 4k backward and d = 64 causal 1k backward (the lowest
# backward cell, 0.94 of FA4 in the final run). Outputs tarred (the device tool returns 8 files).
set -u
ROOT=$OUT
OUT=$ROOT/ncu NCU_CASES="fwd 256 1024 1 fa3lite;fwd 256 1024 1 fa4;bwd 128 4096 0 fa3lite;bwd 128 4096 0 fa4;bwd 64 1024 1 fa3lite;bwd 64 1024 1 fa4" \
  timeout 560 bash tools/speed_round.sh peers_last ncu
grep -E "CASE|fa3lite_|kernel_cutlass|duration|hmma|issue_active|inst_executed |lts__t|pipe_xu" $ROOT/ncu/ncu_metrics.txt | head -90
cd $ROOT && tar -czf ncu.tgz ncu && rm -rf ncu
