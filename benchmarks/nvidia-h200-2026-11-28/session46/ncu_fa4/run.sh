#!/usr/bin/env bash
# Session 46 ncu_fa4: the final run's furthest-behind forward cell, d = 128 causal 1k (ours 375, FA4
# 418 TFLOP/s in bf16), under ncu beside FA4 (--clock-control none; tools/speed_round.sh ncu: the
# metrics pass and the SourceCounters/WarpStateStats pass, one launch each). FA4 staged in three
# calls back to back: carry .peers/p1 `bash tools/speed_round.sh peers_part`, .peers/p2 the same,
# then .peers/p3 this script.
NCU_CASES="fwd 128 1024 1 fa3lite;fwd 128 1024 1 fa4" timeout 330 bash tools/speed_round.sh peers_last ncu
grep -E "CASE|duration|hmma|issue_active|inst_executed |pipe_xu|lts__t" $OUT/ncu_metrics.txt | head -40
