#!/usr/bin/env bash
# Prepared for session 55's first call (RESULTS section 54, "Landed"): is the d = 256 causal backward
# of a5ad6a2 (one CTA per tile, compiled without the tile walk; its mainloop's SASS as before) slower
# than 83608da's? Set up on the CPU side first:
#   rm -rf _vo && mkdir _vo && git archive 83608da cuda_src fa3lite | tar -x -C _vo
# then run this with carry ["_vo"]. ~250 s.
# 1. Main kernel per call (call_timeline), d = 256 both masks 1k / 4k / 16k, the trees in both orders
#    (the second of a pair runs on a warmer GPU).
# 2. A/B, 3 rounds, d = 256 at 1k / 4k / 16k, both masks.
set -u
export PYTHONUNBUFFERED=1
repo=$PWD
run() {  # tag root cell...
  local tag=$1 root=$(cd "$2" && pwd); shift 2
  local name="$*"
  local f="$OUT/timeline_${tag}_${name// /_}.txt"
  (cd $root && PYTHONPATH=$root FA3LITE_CACHE_DIR=/tmp/fa3c_$tag timeout 60 python3 $repo/tools/call_timeline.py "$@" bwd) >> $f 2>&1
  echo "$tag $* rc=$? $(grep -E 'fa3lite_bwd$' $f | tail -n 2 | tr -s ' ' | tr '\n' '|')"
}
for cell in "256 1024 1" "256 4096 1" "256 16384 1" "256 4096 0"; do
  run old _vo $cell; run new . $cell; run new . $cell; run old _vo $cell
done
ROOT=$OUT
OUT=$ROOT/bwd AB_TREES="before=_vo after=." timeout 200 bash tools/ab_round.sh 3 --head-dim 256 \
  --seqlen 1k,4k,16k --mode bwd --soak-ms 200 > $ROOT/ab_bwd.log 2>&1; echo "ab bwd rc=$?"
OUT=$ROOT
cat $OUT/bwd/ab_summary.txt
cd $OUT && tar -czf timelines.tgz timeline_*.txt ab_bwd.log bwd && rm -rf timeline_*.txt bwd
