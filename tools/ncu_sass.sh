#!/usr/bin/env bash
# Warp-stall samples per SASS instruction of one kernel, on the device: ncu (--clock-control none)
# profiles the first launch matching KERNEL_REGEX inside tools/ncu_probe.py's profiled region and
# exports its source page (SASS, per-instruction samples and stall reasons) as a gzipped CSV, read
# on the CPU with tools/ncu_stalls.py. The recipe of sessions 28, 31 and 41's device calls.
# Usage: OUT=dir bash tools/ncu_sass.sh KERNEL_REGEX fwd|bwd D S causal(0|1) impl
#   e.g. bash tools/ncu_sass.sh 'fa3lite_bwd$' bwd 64 4096 0 fa3lite  ->  $OUT/bwd_64_4096_0_fa3lite.csv.gz
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
if [ $# -ne 6 ]; then
  echo "usage: bash tools/ncu_sass.sh KERNEL_REGEX fwd|bwd D S causal(0|1) impl" >&2
  exit 2
fi
regex=$1; shift
tag=$(IFS=_; echo "$*")
rep=/tmp/ncu_sass_$tag
timeout 200 ncu --clock-control none --profile-from-start off -k "regex:$regex" --launch-count 1 \
  --section SourceCounters --section WarpStateStats --import-source no -f -o "$rep" \
  python3 tools/ncu_probe.py "$@" > "$OUT/$tag.log" 2>&1
rc=$?
if [ $rc -ne 0 ] || [ ! -f "$rep.ncu-rep" ]; then
  echo "ncu_sass: profiling $tag failed (rc $rc): $OUT/$tag.log" >&2
  exit 1
fi
timeout 120 ncu -i "$rep.ncu-rep" --page source --csv --print-source sass 2>> "$OUT/$tag.log" | gzip -c > "$OUT/$tag.csv.gz"
echo "ncu_sass: $OUT/$tag.csv.gz"
