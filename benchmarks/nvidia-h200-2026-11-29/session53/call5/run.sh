#!/usr/bin/env bash
# Session 53, call 5: why call 2's persistent backward ran 1-4% slower at full masks (where its
# static tile order cannot unbalance the SMs). Per-tile traces (tools/trace_probe.py, FA3LITE_TRACE
# builds) of HEAD (one CTA per tile) and _vp (HEAD + call2/persistent_dropped.diff, with its
# trace_probe whose units are tiles): d = 64 full 1k, d = 64 causal 1k, d = 128 full 1k.
set -u
export PYTHONUNBUFFERED=1
for cell in "64 0" "64 1" "128 0"; do
  set -- $cell
  for pair in head=. persistent=_vp; do
    tag=${pair%%=*}; root=$(cd "${pair#*=}" && pwd)
    (cd $root && PYTHONPATH=$root FA3LITE_CACHE_DIR=/tmp/fa3c_tr_$tag timeout 90 python3 tools/trace_probe.py \
      --mode bwd --head-dim $1 --causal $2 --seqlen 1k) > $OUT/trace_${tag}_d$1_c$2.json 2> $OUT/trace_${tag}_d$1_c$2.err
    echo "trace $tag d=$1 causal=$2 rc=$?"; cut -c1-900 $OUT/trace_${tag}_d$1_c$2.json
  done
done
