#!/usr/bin/env bash
# Session 45 ncu_bwd: ncu/'s source page of "bwd 128 16384 0" caught the first kernel the probe runs
# (the forward: --launch-count 1 with a regex matching both). The backward main kernel alone here.
NCU_CASES="bwd 128 16384 0 fa3lite" NCU_KERNELS='regex:fa3lite_bwd$' timeout 250 bash tools/speed_round.sh ncu
grep -E "CASE|duration|hmma|inst_executed|issue_active|lts__|xu|per_second" $OUT/ncu_metrics.txt | head -20
