#!/usr/bin/env bash
# Main-kernel timelines of several trees side by side (tools/call_timeline.py), for the cells where an
# A/B's 1-2% spread between rounds cannot decide. Trees run in the order listed, per cell; list a tag
# twice to run both orders ("old=_vo new=. new=. old=_vo"). A dir other than "." is a git-ignored copy
# of fa3lite/ and cuda_src/ (as tools/ab_round.sh's), carried to the device.
#   OUT=... [MODE=bwd|fwd] bash tools/timeline_round.sh "tag=dir ..." "D S causal" ["D S causal" ...]
# Appends each run to $OUT/timeline_<tag>_<D>_<S>_<causal>.txt and prints the run's whole-call lines
# ("a call") and fa3lite's kernels, cold then soaked.
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
trees=$1
shift
repo=$PWD
for cell in "$@"; do
  for pair in $trees; do
    tag=${pair%%=*}; root=$(cd "${pair#*=}" && pwd)
    f="$OUT/timeline_${tag}_${cell// /_}.txt"
    (cd "$root" && PYTHONPATH=$root FA3LITE_CACHE_DIR=/tmp/fa3c_$tag timeout 60 \
      python3 "$repo/tools/call_timeline.py" $cell "${MODE:-bwd}") > "$f.run" 2>&1
    rc=$?
    cat "$f.run" >> "$f"
    echo "$tag $cell rc=$rc $(grep -E 'a call|fa3lite' "$f.run" | tr -s ' ' | tr '\n' '|')"
    rm -f "$f.run"
  done
done
