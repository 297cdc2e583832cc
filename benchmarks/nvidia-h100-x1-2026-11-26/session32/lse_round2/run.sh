#!/usr/bin/env bash
# Session 32, lse_round2: lse_round1's tree "." (dO wait before the LSE loads) A/B vs HEAD (_vp) again,
# 5 rounds, bwd d=128 (noisy in round 1) and d=64 4k/16k; then ncu of the D = 64 full 4k backward
# (metrics and stall samples per SASS instruction, as session 31's ncu_round2).
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
OUT=$OUT AB_TREES="head=_vp lse=." timeout 300 bash tools/ab_round.sh 5 --head-dim 128 --seqlen 1k,4k,16k --mode bwd
mkdir -p $OUT/d64 && OUT=$OUT/d64 AB_TREES="head=_vp lse=." timeout 120 bash tools/ab_round.sh 4 --head-dim 64 --seqlen 4k,16k --mode bwd
M=sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed
timeout 100 ncu --clock-control none --profile-from-start off -k regex:'fa3lite_bwd$' --metrics $M \
  python3 tools/ncu_probe.py bwd 64 4096 0 fa3lite > $OUT/ncu_metrics.txt 2>&1
tag=d64_s4096_c0
timeout 150 ncu --clock-control none --profile-from-start off -k regex:'fa3lite_bwd$' --launch-count 1 \
  --section SourceCounters --section WarpStateStats --import-source no -f -o /tmp/$tag \
  python3 tools/ncu_probe.py bwd 64 4096 0 fa3lite > $OUT/$tag.log 2>&1
timeout 100 ncu -i /tmp/$tag.ncu-rep --page source --csv --print-source sass > /tmp/$tag.csv 2>>$OUT/$tag.log
gzip -c /tmp/$tag.csv > $OUT/$tag.csv.gz
grep -E "duration|hmma|inst_executed|lts__" $OUT/ncu_metrics.txt
