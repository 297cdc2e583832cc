#!/usr/bin/env bash
# Session 32, ncu_fwd_fa4 call 2 of 2: the forward at 16k full, ours beside FA4 4.0.0b36 (bf16, 16k
# tokens, width 2048): metrics for d=64 and d=128, then FA4's warp-stall samples per SASS instruction
# (session28/ncu_round2/stalls.py reads them) to set beside ncu_fwd's of ours.
cd "$(dirname "$0")/../../../.."
source .peers/b/install.sh > $OUT/install.log 2>&1
export PYTHONPATH=$PWD:$PYTHONPATH
M=sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,launch__grid_size,launch__registers_per_thread,launch__block_size
for c in "fwd 128 16384 0 fa3lite" "fwd 128 16384 0 fa4" "fwd 64 16384 0 fa3lite" "fwd 64 16384 0 fa4"; do
  echo "===== CASE $c" >> $OUT/ncu_metrics.txt
  timeout 100 ncu --clock-control none --profile-from-start off --metrics $M python3 tools/ncu_probe.py $c >> $OUT/ncu_metrics.txt 2>&1
  echo "rc=$?" >> $OUT/ncu_metrics.txt
done
for c in "128 16384" "64 16384"; do
  set -- $c
  tag=fa4_fwd_d$1_s$2_c0
  timeout 150 ncu --clock-control none --profile-from-start off --launch-count 1 \
    --section SourceCounters --section WarpStateStats --import-source no -f -o /tmp/$tag \
    python3 tools/ncu_probe.py fwd $1 $2 0 fa4 > $OUT/$tag.log 2>&1
  timeout 100 ncu -i /tmp/$tag.ncu-rep --page source --csv --print-source sass > /tmp/$tag.csv 2>>$OUT/$tag.log
  gzip -c /tmp/$tag.csv > $OUT/$tag.csv.gz
done
grep -E "CASE|  [a-z_]+Sm90|fa3lite_fwd|duration|hmma|inst_executed|issue_active|xu|grid_size|registers|block_size" $OUT/ncu_metrics.txt
