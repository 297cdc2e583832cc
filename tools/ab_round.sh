#!/usr/bin/env bash
# Kernel A/B on the device: tools/ab_time.py (or AB_SCRIPT, another tools/ script that takes --tag
# and prints JSON rows, e.g. tools/varlen_ab.py) run ROUNDS times on each of several trees, in
# alternation (so clock drift hits all alike), then the per-cell medians (tools/ab_summary.py).
# Trees: AB_TREES="tag=dir ..." (default "before=_before after=."); a dir other than "." is a
# git-ignored copy of fa3lite/ and cuda_src/ (e.g. `git archive <commit> cuda_src fa3lite | tar -x
# -C _before`), carried to the device. The summary's ratios are against the first tag.
# Usage: OUT=... [AB_TREES=...] [AB_SCRIPT=tools/x.py] bash tools/ab_round.sh [rounds] [script args...]
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
rounds=${1:-2}
shift || true
trees=${AB_TREES:-before=_before after=.}
script=${AB_SCRIPT:-tools/ab_time.py}
repo=$PWD
for r in $(seq "$rounds"); do
  for pair in $trees; do
    tag=${pair%%=*}; root=$(cd "${pair#*=}" && pwd)
    (cd "$root" && FA3LITE_CACHE_DIR=/tmp/fa3c_$tag PYTHONPATH=$root timeout 300 python3 "$repo/$script" --tag "$tag" "$@") \
      >> "$OUT/ab.jsonl" 2>> "$OUT/ab.err"
    echo "== round $r $tag rc=$?"
  done
done
python3 tools/ab_summary.py "$OUT/ab.jsonl" $(for pair in $trees; do printf '%s ' "${pair%%=*}"; done) | tee "$OUT/ab_summary.txt"
