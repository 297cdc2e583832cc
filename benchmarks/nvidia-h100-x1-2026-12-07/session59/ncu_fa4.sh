#!/usr/bin/env bash
# Session 59, call 10 (after calls 7-9 left .peers/p1-p3 in /root/peers; carry .peers/p4, which installs
# FA4): tools/speed_round.sh's ncu step for ours and FA4's main kernels in the final run's two furthest
# 16k cells: fwd d = 128 full (0.935 of FA4) and bwd d = 64 full (0.950; FA4's only: ours, the same
# SASS, is session57/call6). As session52/call2/ncu_fa4.sh.
set -u
ROOT=$OUT
OUT=$ROOT/ncu NCU_CASES="fwd 128 16384 0 fa3lite;fwd 128 16384 0 fa4;bwd 64 16384 0 fa4" \
  timeout 560 bash tools/speed_round.sh peers_last ncu
grep -E "CASE|fa3lite_|kernel_cutlass|duration|hmma|issue_active|inst_executed |lts__t|pipe_xu|elapsed.avg" $ROOT/ncu/ncu_metrics.txt | head -90
cd $ROOT && tar -czf ncu.tgz ncu && rm -rf ncu
