#!/usr/bin/env bash
# Session 51, call 3: L2 prefetches ahead of the loads that start a tile (call 2's traces: a d = 256
# forward tile waits 3.1 us from freeing sQ to its next Q, and a backward CTA 2.3 us from its start
# to its first Q). Trees: before = _vo (HEAD a3a6c4c's cuda_src and fa3lite), after = . (the forward's
# producer prefetches a tile's Q into L2 as it takes the tile, one-Q-buffer variants; the backward's
# idle producer warp 3 prefetches the K/V block and first Q/dO tile of the CTA one wave later).
# 1. A/B, 3 rounds: forward d = 256 (the variants that changed), backward d = 64/128/256 at 1k/4k.
# 2. Traces of the after tree at the two cells of call 2.
# 3. Debug build (bounded waits, NaN-poisoned outputs): the backward tests, the forward's d = 256 ones.
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
ROOT=$OUT
OUT=$ROOT/fwd AB_TREES="before=_vo after=." timeout 200 bash tools/ab_round.sh 3 --head-dim 256 \
  --seqlen 1k,4k,16k --mode fwd --soak-ms 200 > $ROOT/ab_fwd.log 2>&1; echo "ab fwd rc=$?"
OUT=$ROOT/bwd AB_TREES="before=_vo after=." timeout 260 bash tools/ab_round.sh 3 --head-dim 64,128,256 \
  --seqlen 1k,4k --mode bwd --soak-ms 200 > $ROOT/ab_bwd.log 2>&1; echo "ab bwd rc=$?"
OUT=$ROOT
cat $OUT/fwd/ab_summary.txt $OUT/bwd/ab_summary.txt
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 60 python3 tools/trace_probe.py --mode fwd --head-dim 256 \
  --causal 1 --seqlen 1k >> $OUT/trace.jsonl 2>> $OUT/trace.err; echo "trace fwd rc=$?"
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 60 python3 tools/trace_probe.py --mode bwd --head-dim 64 \
  --causal 1 --seqlen 1k >> $OUT/trace.jsonl 2>> $OUT/trace.err; echo "trace bwd rc=$?"
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 150 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_bwd_gpu.py > $OUT/debug_bwd.log 2>&1
echo "debug bwd tests rc=$?"; tail -2 $OUT/debug_bwd.log
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 90 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_fwd_gpu.py -k 256 > $OUT/debug_fwd.log 2>&1
echo "debug fwd tests rc=$?"; tail -2 $OUT/debug_fwd.log
cd $OUT && for d in fwd bwd; do tar -czf ab_$d.tgz $d/ab.jsonl $d/ab.err && rm -f $d/ab.jsonl $d/ab.err; done
