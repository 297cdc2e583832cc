#!/usr/bin/env bash
# Session 31, ncu_round1: the backward after the per-warpgroup dQ hand-off (tree of 1cf1140), ours
# only (FA4's figures: session 28 ncu_round1): tensor pipe, instructions, L2 and shared-memory
# metrics, then warp-stall samples per SASS instruction (source page), d=64 full 4k and d=128
# causal 4k, bf16, 16k tokens, width 2048. Read the source pages with session28/ncu_round2/stalls.py.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt
M=sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum,lts__t_sectors.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed
for c in "bwd 64 4096 0 fa3lite" "bwd 128 4096 1 fa3lite" "bwd 128 4096 0 fa3lite"; do
  echo "===== CASE $c" >> $OUT/ncu_metrics.txt
  timeout 120 ncu --clock-control none --profile-from-start off -k regex:'fa3lite_bwd$' --metrics $M python3 tools/ncu_probe.py $c >> $OUT/ncu_metrics.txt 2>&1
  echo "rc=$?" >> $OUT/ncu_metrics.txt
done
for c in "64 4096 0" "128 4096 1"; do
  set -- $c
  tag=d$1_s$2_c$3
  timeout 200 ncu --clock-control none --profile-from-start off -k regex:'fa3lite_bwd$' --launch-count 1 \
    --section SourceCounters --section WarpStateStats --import-source no -f -o /tmp/$tag \
    python3 tools/ncu_probe.py bwd $1 $2 $3 fa3lite > $OUT/$tag.log 2>&1
  timeout 120 ncu -i /tmp/$tag.ncu-rep --page source --csv --print-source sass > /tmp/$tag.csv 2>>$OUT/$tag.log
  gzip -c /tmp/$tag.csv > $OUT/$tag.csv.gz
done
ls -la $OUT
