#!/usr/bin/env bash
# Session 32, tune_fwd64: the d=64 full-mask forward tiles re-timed at 4k/8k/16k (tools/fwd_tune.py
# --interleave, cuDNN alternating): persistent 192 x 128 (today's) against one CTA per tile (FA4's grid,
# 62.4% tensor pipe against our 60.0% in ncu_fwd_fa4), three stages and pingpong.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
timeout 400 python3 tools/fwd_tune.py 64 --interleave --full --seqlen=4096,8192,16384 > $OUT/tune.log 2>&1
echo "rc $?" >> $OUT/tune.log
grep -E "d=64|rc" $OUT/tune.log
