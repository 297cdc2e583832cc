#!/usr/bin/env bash
# Round 8: ncu source-level stall sampling of the backward main kernel (d=64 causal 1k, full 4k).
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
for c in "64 1024 1 0" "64 4096 0 0"; do
  tag=$(echo $c | tr ' ' _)
  timeout 150 ncu --clock-control none --profile-from-start off -k regex:fa3lite_bwd$ --section SourceCounters --section WarpStateStats --section SpeedOfLight -o $OUT/rep_$tag python3 tools/ncu_bwd_probe.py $c > $OUT/ncu_$tag.log 2>&1
  timeout 100 ncu -i $OUT/rep_$tag.ncu-rep --page source --print-source sass --csv > $OUT/src_$tag.csv 2>&1
  timeout 60 ncu -i $OUT/rep_$tag.ncu-rep --page details > $OUT/details_$tag.txt 2>&1
  ls -la $OUT; head -c 600 $OUT/src_$tag.csv
done
