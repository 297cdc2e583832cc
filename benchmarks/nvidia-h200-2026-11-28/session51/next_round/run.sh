#!/usr/bin/env bash
# Prepared in session 51, not run: Q in one 64-row part per consumer warpgroup in the kDirectO forward
# (D = 192/256, fixed lengths and varlen; q_parts.diff). Section 51's traces: at d = 256 causal 1k the
# next tile's Q arrives 3.1 us after sQ is freed, and sQ is freed only once both warpgroups' last
# Q K^T is done -- warpgroup 1's comes about one pingpong turn after warpgroup 0's. With a part each
# (config.cuh kQParts: own box of 64 rows, own q_full/q_empty), warpgroup 0's next Q loads when its
# own mainloop ends and is half the bytes. Compiled in session 51: every forward variant 0 spills,
# 0 stack; the D = 256 kernels carry 4 UTMALDG (two Q parts, K, V), padded D = 192 16.
# Before the call (N = benchmarks/nvidia-h200-2026-11-28/session51/next_round):
#   rm -rf _vo && mkdir _vo && git archive HEAD cuda_src fa3lite | tar -x -C _vo
#   git apply $N/q_parts.diff          # the working tree: the change, with its CPU tests
# carry ["_vo"]. About 480 s.
#  1. Debug build (bounded waits, NaN-poisoned outputs): forward d = 256, varlen and features at
#     D = 192/256; compute-sanitizer racecheck and synccheck over tools/fwd_sanitize.py (its d = 256
#     cases run the parts' barriers through many tiles). Synccheck for the pingpong turns: with a Q
#     part of its own, warpgroup 0 no longer waits for warpgroup 1's release of Q before its next
#     tile's first turn, so only timing (its epilogue, ~2 us, against warpgroup 1's last turn, one
#     turn behind) keeps its next pass on the turn barrier after warpgroup 1's last wait there -- as
#     with the d = 128 kernels' two Q buffers today. A proof would have the last warpgroup pass its
#     final turn on when the CTA has a next tile.
#  2. A/B before (_vo) / after (.), d = 256 forward, 4 rounds; the varlen batch at D = 256.
#  3. The per-tile trace of d = 256 causal 1k again (Q wait at a tile's start: 0.89 us in call 2).
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 150 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_fwd_gpu.py tests/test_varlen_gpu.py tests/test_features_gpu.py \
  -k "256 or 192" > $OUT/debug_tests.log 2>&1
echo "debug tests rc=$?"; tail -2 $OUT/debug_tests.log
for tool in racecheck synccheck; do
  PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 80 compute-sanitizer \
    --tool $tool --report-api-errors no python3 tools/fwd_sanitize.py > $OUT/san_fwd_$tool.log 2>&1
  echo "fwd_sanitize $tool rc=$? $(tail -n 1 $OUT/san_fwd_$tool.log)"
done
ROOT=$OUT
OUT=$ROOT/dense AB_TREES="before=_vo after=." timeout 150 bash tools/ab_round.sh 4 --head-dim 256 \
  --seqlen 1k,4k,16k --mode fwd --soak-ms 200 > $ROOT/ab_dense.log 2>&1; echo "ab dense rc=$?"
OUT=$ROOT/varlen AB_SCRIPT=tools/varlen_ab.py AB_TREES="before=_vo after=." timeout 100 bash tools/ab_round.sh 4 \
  --head-dim 256 --soak-ms 200 > $ROOT/ab_varlen.log 2>&1; echo "ab varlen rc=$?"
OUT=$ROOT
cat $OUT/dense/ab_summary.txt $OUT/varlen/ab_summary.txt
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 60 python3 tools/trace_probe.py --mode fwd --head-dim 256 \
  --causal 1 --seqlen 1k > $OUT/trace.jsonl 2> $OUT/trace.err; echo "trace rc=$?"
cd $OUT && for d in dense varlen; do tar -czf ab_$d.tgz $d && rm -rf $d; done
