#!/usr/bin/env bash
# Session 45 ncu: the two cells furthest below the best peer in the fp16 and bf16 grids, ours alone
# (FA4 is not staged in this call): the backward main kernel at d = 128 full 16k (0.93 fp16 / 0.97
# bf16 of FA4) and the forward at d = 256 causal 1k (0.92 / 0.97). Metrics (tensor pipe, issue,
# L2, instructions) and warp-stall samples per SASS instruction (tools/ncu_stalls.py reads them).
NCU_CASES="bwd 128 16384 0 fa3lite;fwd 256 1024 1 fa3lite" NCU_KERNELS='regex:fa3lite_(fwd|bwd)$' \
  timeout 320 bash tools/speed_round.sh ncu
grep -E "CASE|duration|hmma|inst_executed|issue_active|lts__|xu|per_second" $OUT/ncu_metrics.txt | head -40
