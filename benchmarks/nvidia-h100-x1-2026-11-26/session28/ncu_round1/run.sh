#!/usr/bin/env bash
# Session 28, device call 2 of 2 (call 1 copied .peers/a to /root/peers). Backward main kernels under
# ncu, ours beside FA4 at the same shapes: sections, then shared-memory / tensor-pipe metrics.
cd "$(dirname "$0")/../../../.."
source .peers/b/install.sh > $OUT/install.log 2>&1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt
M=sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__inst_executed_op_shared_st.sum,smsp__inst_executed_op_shared_ld.sum
for c in "bwd 128 4096 1 fa3lite" "bwd 128 4096 1 fa4" "bwd 64 4096 0 fa3lite" "bwd 64 4096 0 fa4" "bwd 128 4096 0 fa3lite" "bwd 128 4096 0 fa4"; do
  echo "===== CASE $c" >> $OUT/ncu_metrics.txt
  timeout 120 ncu --clock-control none --profile-from-start off --metrics $M python3 tools/ncu_probe.py $c >> $OUT/ncu_metrics.txt 2>&1
  echo "rc=$?" >> $OUT/ncu_metrics.txt
done
for c in "bwd 128 4096 1 fa3lite" "bwd 128 4096 1 fa4" "bwd 64 4096 0 fa3lite" "bwd 64 4096 0 fa4"; do
  echo "===== CASE $c" >> $OUT/ncu_sections.txt
  timeout 150 ncu --clock-control none --profile-from-start off -k regex:'fa3lite_bwd$|kernel_cutlass.*[Bb]ackward[Ss]m90' --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section InstructionStats python3 tools/ncu_probe.py $c >> $OUT/ncu_sections.txt 2>&1
  echo "rc=$?" >> $OUT/ncu_sections.txt
done
