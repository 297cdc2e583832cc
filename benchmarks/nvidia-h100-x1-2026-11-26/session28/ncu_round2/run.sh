#!/usr/bin/env bash
# Session 28: where the backward's warps stall, per SASS instruction (ncu source page, warp-state
# samples), ours only: d=128 causal 4k and d=64 full 4k, bf16, 16k tokens, width 2048.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
for c in "128 4096 1" "64 4096 0"; do
  set -- $c
  tag=d$1_s$2_c$3
  timeout 200 ncu --clock-control none --profile-from-start off -k regex:'fa3lite_bwd$' --launch-count 1 \
    --section SourceCounters --section WarpStateStats --import-source no -f -o /tmp/$tag \
    python3 tools/ncu_probe.py bwd $1 $2 $3 fa3lite > $OUT/$tag.log 2>&1
  timeout 120 ncu -i /tmp/$tag.ncu-rep --page source --csv --print-source sass > /tmp/$tag.csv 2>>$OUT/$tag.log
  gzip -c /tmp/$tag.csv > $OUT/$tag.csv.gz
  timeout 60 ncu -i /tmp/$tag.ncu-rep --page details --print-details all >> $OUT/$tag.log 2>&1
done
ls -la $OUT
