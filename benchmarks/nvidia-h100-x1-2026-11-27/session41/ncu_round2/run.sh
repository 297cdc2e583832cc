#!/usr/bin/env bash
# Session 41 ncu_round2: warp-stall samples per SASS instruction of our D = 64 backward main kernel
# (source page as CSV; read with stalls.py, session 28's), full and causal at 4k, bf16, 16k tokens,
# width 2048. ncu_round1 put ours at 1.07-1.13x FA4's time with more mio_throttle and wait stalls.
set -u
export PYTHONPATH=$PWD:${PYTHONPATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt
for c in "64 4096 0" "64 4096 1"; do
  set -- $c
  tag=d$1_s$2_c$3
  timeout 200 ncu --clock-control none --profile-from-start off -k regex:'fa3lite_bwd$' --launch-count 1 \
    --section SourceCounters --section WarpStateStats --import-source no -f -o /tmp/$tag \
    python3 tools/ncu_probe.py bwd $1 $2 $3 fa3lite > $OUT/$tag.log 2>&1
  timeout 120 ncu -i /tmp/$tag.ncu-rep --page source --csv --print-source sass > /tmp/$tag.csv 2>>$OUT/$tag.log
  gzip -c /tmp/$tag.csv > $OUT/$tag.csv.gz
done
ls -la $OUT
