#!/usr/bin/env bash
# Session 41 ncu_round1: the D = 64 backward's main kernel beside FA4's (the grid's last gap: 0.95-0.99
# of FA4 in the final run), full and causal at 4k, bf16, 16k tokens, width 2048; ncu
# --clock-control none. Three calls: `bash run.sh 1` (carry .peers/p1), `bash run.sh 2` (.peers/p2),
# `bash run.sh 3` (.peers/p3: installs FA4, then profiles).
set -u
case "$1" in
  1|2) bash tools/speed_round.sh peers_part; exit 0 ;;
esac
source .peers/p3/install.sh > $OUT/install.log 2>&1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt
K='regex:fa3lite_bwd$|kernel_cutlass.*[Bb]ackward[Ss]m90'
M=sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_alu.sum,smsp__inst_executed_pipe_xu.sum,smsp__inst_executed_op_shared_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_global_red.sum,smsp__inst_executed_op_global_ld.sum
for c in "bwd 64 4096 0 fa3lite" "bwd 64 4096 0 fa4" "bwd 64 4096 1 fa3lite" "bwd 64 4096 1 fa4"; do
  echo "===== CASE $c" >> $OUT/ncu_metrics.txt
  timeout 120 ncu --clock-control none --profile-from-start off -k "$K" --metrics $M python3 tools/ncu_probe.py $c >> $OUT/ncu_metrics.txt 2>&1
  echo "rc=$?" >> $OUT/ncu_metrics.txt
  echo "===== CASE $c" >> $OUT/ncu_stalls.txt
  timeout 150 ncu --clock-control none --profile-from-start off -k "$K" --section WarpStateStats --section SchedulerStats \
    --section Occupancy python3 tools/ncu_probe.py $c >> $OUT/ncu_stalls.txt 2>&1
  echo "rc=$?" >> $OUT/ncu_stalls.txt
  echo "===== CASE $c" >> $OUT/ncu_stall_reasons.txt
  timeout 120 ncu --clock-control none --profile-from-start off -k "$K" \
    --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' python3 tools/ncu_probe.py $c \
    >> $OUT/ncu_stall_reasons.txt 2>&1
  echo "rc=$?" >> $OUT/ncu_stall_reasons.txt
done
