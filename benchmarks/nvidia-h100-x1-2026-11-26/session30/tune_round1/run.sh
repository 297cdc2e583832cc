#!/usr/bin/env bash
# Session 30, tune_round1 (issue 8): the causal forward's tiles re-swept after this session's
# schedule changes (longest first, deferred O read, per-warpgroup hand-off, two Q buffers): every
# d=64 and d=128 candidate of tools/fwd_tune.py, causal, 1k/2k/4k, cuDNN in alternation.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
timeout 500 python3 tools/fwd_tune.py 64 128 --interleave --causal --seqlen=1024,2048,4096 > $OUT/tune.log 2>&1
echo "rc $?" >> $OUT/tune.log
cat $OUT/tune.log
