#!/usr/bin/env bash
# Session 31 fp16, call 2 (call 1, stage_a.sh, copied .peers/a): the fp16 grid with FA4 (issue 8/9's
# fp16 bar: >= 1.0x the better peer), final tree (source dcbe1cf3: final2's 7093f423 and one comment).
cd "$(dirname "$0")/../../../.."
source .peers/b/install.sh > $OUT/install.log 2>&1
export PYTHONPATH=$PWD:$PYTHONPATH
timeout 230 python3 -m fa3lite.bench --mode fwd,bwd --head-dim 64,128,256 --causal both --seqlen 1k,4k,16k \
  --dtype fp16 --impl fa3lite,cudnn,fa4 --no-compile-time --no-plots --no-host-time --no-features \
  --time-budget 150 --out $OUT/fp16 > $OUT/fp16.log 2>&1
echo "bench rc $?" >> $OUT/fp16.log
tail -2 $OUT/fp16.log
