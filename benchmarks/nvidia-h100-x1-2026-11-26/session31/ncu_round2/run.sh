#!/usr/bin/env bash
# Session 31, ncu_round2: D = 64 full 4k backward after the three-stage ring (final tree, source
# dcbe1cf3): metrics and warp-stall samples per SASS instruction (read the source page with
# session28/ncu_round2/stalls.py), bf16, 16k tokens, width 2048.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
M=sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed
timeout 120 ncu --clock-control none --profile-from-start off -k regex:'fa3lite_bwd$' --metrics $M \
  python3 tools/ncu_probe.py bwd 64 4096 0 fa3lite > $OUT/ncu_metrics.txt 2>&1
tag=d64_s4096_c0
timeout 200 ncu --clock-control none --profile-from-start off -k regex:'fa3lite_bwd$' --launch-count 1 \
  --section SourceCounters --section WarpStateStats --import-source no -f -o /tmp/$tag \
  python3 tools/ncu_probe.py bwd 64 4096 0 fa3lite > $OUT/$tag.log 2>&1
timeout 120 ncu -i /tmp/$tag.ncu-rep --page source --csv --print-source sass > /tmp/$tag.csv 2>>$OUT/$tag.log
gzip -c /tmp/$tag.csv > $OUT/$tag.csv.gz
grep -E "duration|hmma|inst_executed|lts__" $OUT/ncu_metrics.txt
