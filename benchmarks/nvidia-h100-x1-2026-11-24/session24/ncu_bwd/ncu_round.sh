#!/usr/bin/env bash
# Round 5 (FA4 call 2 of 2): install FA4; ncu of the backward, fa3lite beside FA4 (and cuDNN).
set -u
source .peers/b/install.sh > $OUT/install.log 2>&1
export PYTHONPATH=$PWD:$PYTHONPATH PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
M="smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,smsp__average_warps_issue_stalled_misc_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio,smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__block_size"
for c in "bwd 64 1024 1 fa3lite" "bwd 64 1024 1 fa4" "bwd 64 4096 0 fa3lite" "bwd 64 4096 0 fa4" "bwd 128 4096 0 fa3lite" "bwd 128 4096 0 fa4"; do
  echo "===== CASE $c" >> $OUT/ncu.txt
  timeout 90 ncu --clock-control none --profile-from-start off --metrics "$M" python3 tools/ncu_probe.py $c >> $OUT/ncu.txt 2>&1
  echo "rc=$?" >> $OUT/ncu.txt
done
grep -E "CASE|^  [a-zA-Z_].*\(|gpu__time|hmma|inst_executed|stalled_(barrier|long|short|wait|math|mio|membar|dispatch|selected|not_sel|no_inst|branch)|grid_size|rc=" $OUT/ncu.txt | sed 's/  */ /g' | head -300
