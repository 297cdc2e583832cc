#!/usr/bin/env bash
# Prepared in session 51, not run: call 3 of 3 of ncu_fa4 (carry .peers/p3, which installs FA4 for this
# invocation): tools/speed_round.sh's ncu step (metrics, then stall samples per SASS instruction) for
# ours and FA4's kernels at d = 256 causal 1k forward and d = 128 full 4k backward. ~300 s.
set -u
NCU_CASES="fwd 256 1024 1 fa3lite;fwd 256 1024 1 fa4;bwd 128 4096 0 fa3lite;bwd 128 4096 0 fa4" \
  timeout 500 bash tools/speed_round.sh peers_last ncu
grep -E "CASE|fa3lite_|kernel_cutlass|duration|hmma|issue_active|inst_executed |lts__t" $OUT/ncu_metrics.txt | head -60
