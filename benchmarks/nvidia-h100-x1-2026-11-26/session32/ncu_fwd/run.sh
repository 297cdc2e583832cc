#!/usr/bin/env bash
# Session 32, ncu_fwd: the forward at 16k full (d=64: 192 x 128 persistent; d=128: 128 x 128 one CTA per
# tile, pingpong), bf16, 16k tokens, width 2048: metrics, then warp-stall samples per SASS instruction
# (read with session28/ncu_round2/stalls.py).
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
M=sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,smsp__inst_executed_op_mufu.sum
for c in "64 16384" "128 16384"; do
  set -- $c
  echo "== d=$1 S=$2" >> $OUT/ncu_metrics.txt
  timeout 100 ncu --clock-control none --profile-from-start off -k regex:'fa3lite_fwd$' --metrics $M \
    python3 tools/ncu_probe.py fwd $1 $2 0 fa3lite >> $OUT/ncu_metrics.txt 2>&1
  tag=fwd_d$1_s$2_c0
  timeout 150 ncu --clock-control none --profile-from-start off -k regex:'fa3lite_fwd$' --launch-count 1 \
    --section SourceCounters --section WarpStateStats --import-source no -f -o /tmp/$tag \
    python3 tools/ncu_probe.py fwd $1 $2 0 fa3lite > $OUT/$tag.log 2>&1
  timeout 100 ncu -i /tmp/$tag.ncu-rep --page source --csv --print-source sass > /tmp/$tag.csv 2>>$OUT/$tag.log
  gzip -c /tmp/$tag.csv > $OUT/$tag.csv.gz
done
grep -E "==|duration|hmma|inst_executed|issue_active|xu|mufu" $OUT/ncu_metrics.txt
