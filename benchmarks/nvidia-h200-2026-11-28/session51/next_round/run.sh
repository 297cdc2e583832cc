#!/usr/bin/env bash
# Prepared in session 51, not run. Two forward changes, compiled here (every forward variant 0 spills,
# 0 stack; CPU tests in q_parts_handoff.diff):
#  - pingpong_handoff.diff: the pingpong round runs through a CTA's tiles unbroken (pingpong.cuh):
#    warpgroup 0 gives itself the turn once per CTA, the last warpgroup passes its final turn of a tile
#    on to warpgroup 0, and warpgroup 0 takes the last pass when the CTA ends. Today warpgroup 0 gives
#    itself the first turn of every tile, so nothing but timing keeps it from passing on its next
#    tile's first turn before warpgroup 1 has waited its last turn of this one (a second arrival from
#    the same warpgroup would complete warpgroup 1's barrier alone, and the turns would hang). With
#    two Q buffers (d = 128) or a Q part per warpgroup (below) no Q dependency orders it either.
#  - q_parts.diff (q_parts_handoff.diff is both): Q in one 64-row part per consumer warpgroup in the
#    kDirectO forward (D = 192/256): config.cuh kQParts, each part its own TMA box and q_full/q_empty.
#    Section 51's traces: at d = 256 causal 1k the next tile's Q arrives 3.1 us after sQ is freed,
#    which waits for both warpgroups' last Q K^T; warpgroup 1's comes a pingpong turn later. With a
#    part each, warpgroup 0's next Q loads when its own mainloop ends and is 32 KB, not 64.
# Before the call (N = benchmarks/nvidia-h200-2026-11-28/session51/next_round):
#   rm -rf _vo _vh && mkdir _vo _vh && git archive HEAD cuda_src fa3lite | tar -x -C _vo
#   git archive HEAD cuda_src fa3lite | tar -x -C _vh && git apply --directory=_vh $N/pingpong_handoff.diff
#   git apply $N/q_parts_handoff.diff          # the working tree: both, with the CPU tests
# carry ["_vo", "_vh"]. About 520 s.
#  1. Debug build (bounded waits, NaN-poisoned outputs): the forward tests, varlen and features at
#     D = 192/256; racecheck and synccheck over tools/fwd_sanitize.py (every head dim, pingpong turns
#     and Q parts through many tiles).
#  2. A/B, 4 rounds, forward d = 128 and 256: before (_vo), handoff (_vh), both (.); varlen D = 256.
#  3. The per-tile trace of d = 256 causal 1k (Q wait at a tile's start: 0.89 us in call 2).
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 150 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_fwd_gpu.py > $OUT/debug_fwd.log 2>&1
echo "debug fwd tests rc=$?"; tail -2 $OUT/debug_fwd.log
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 100 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_varlen_gpu.py tests/test_features_gpu.py -k "256 or 192" > $OUT/debug_features.log 2>&1
echo "debug varlen/feature tests rc=$?"; tail -2 $OUT/debug_features.log
for tool in racecheck synccheck; do
  PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 70 compute-sanitizer \
    --tool $tool --report-api-errors no python3 tools/fwd_sanitize.py > $OUT/san_fwd_$tool.log 2>&1
  echo "fwd_sanitize $tool rc=$? $(tail -n 1 $OUT/san_fwd_$tool.log)"
done
ROOT=$OUT
OUT=$ROOT/dense AB_TREES="before=_vo handoff=_vh both=." timeout 200 bash tools/ab_round.sh 4 --head-dim 128,256 \
  --seqlen 1k,4k,16k --mode fwd --soak-ms 200 > $ROOT/ab_dense.log 2>&1; echo "ab dense rc=$?"
OUT=$ROOT/varlen AB_SCRIPT=tools/varlen_ab.py AB_TREES="before=_vo both=." timeout 80 bash tools/ab_round.sh 3 \
  --head-dim 256 --soak-ms 200 > $ROOT/ab_varlen.log 2>&1; echo "ab varlen rc=$?"
OUT=$ROOT
cat $OUT/dense/ab_summary.txt $OUT/varlen/ab_summary.txt
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 40 python3 tools/trace_probe.py --mode fwd --head-dim 256 \
  --causal 1 --seqlen 1k > $OUT/trace.jsonl 2> $OUT/trace.err; echo "trace rc=$?"
cd $OUT && for d in dense varlen; do tar -czf ab_$d.tgz $d && rm -rf $d; done
