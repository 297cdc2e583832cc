#!/usr/bin/env bash
# Prepared for the next session (RESULTS section 55, "Prepared, not run"): the backward's postprocess
# folded into the D = 64 main kernel, two forms, neither run on a GPU yet:
#   fold_dq.diff            the dQ writer counts a query block down right after its adds landed
#   fold_dq_pipelined.diff  (on top) ... one visit later, after the next visit's adds went out
# Set-up on the CPU side (project root, no diff applied yet):
#   rm -rf _vo _fold && mkdir _vo _fold && git archive HEAD cuda_src fa3lite | tar -x -C _vo
#   git apply benchmarks/nvidia-h200-2026-11-29/session55/next_round/fold_dq.diff
#   tar -c cuda_src fa3lite | tar -x -C _fold
#   git apply benchmarks/nvidia-h200-2026-11-29/session55/next_round/fold_dq_pipelined.diff
#   python3 -m pytest -q tests/test_bwd_compile.py -k 64 tests/test_plans.py   (and under NVRTC 13.0.88)
# Then two calls with carry ["_vo", "_fold"]: `bash <this> a` (correctness of the pipelined form, ~400 s),
# then `bash <this> b` (speed, ~450 s).
#   a. Debug build (bounded waits, NaN-poisoned dq): the backward tests (test_folded_dq among them:
#      one CTA walking every tile wraps the converter's queue), again with 3 CTAs; the training tests;
#      racecheck and synccheck over tools/race_bwd.py with 2 CTAs.
#   b. A/B before (_vo) / fold (_fold) / pipe (.), the backward at d = 64, 1k / 4k / 16k, both masks,
#      3 rounds, its deterministic mode too (it keeps the postprocess: should read 1.00); the call's
#      kernels (tools/timeline_round.sh) at d = 64 causal 1k and full 1k: the main kernel's length
#      against the postprocess's ~48 us it replaces. If a fold loses: the writer's wait for its adds
#      and the count-down's round trip (ncu's stall samples on the consumers' dq_empty wait) would
#      show it; the pipelined form hides the first of the two.
set -u
export PYTHONUNBUFFERED=1
if [ "${1:-}" = a ]; then
  PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 130 python3 -m pytest -q -x \
    -p no:cacheprovider tests/test_bwd_gpu.py > $OUT/debug_bwd.log 2>&1
  echo "debug bwd tests rc=$?"; tail -n 1 $OUT/debug_bwd.log
  PYTHONPATH=$PWD FA3LITE_BWD_MAX_CTAS=3 FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 80 python3 -m pytest -q -x \
    -p no:cacheprovider tests/test_bwd_gpu.py > $OUT/debug_bwd_cap3.log 2>&1
  echo "debug bwd tests, 3 CTAs rc=$?"; tail -n 1 $OUT/debug_bwd_cap3.log
  PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 60 python3 -m pytest -q -x \
    -p no:cacheprovider tests/test_training_gpu.py > $OUT/debug_training.log 2>&1
  echo "debug training tests rc=$?"; tail -n 1 $OUT/debug_training.log
  for tool in racecheck synccheck; do
    PYTHONPATH=$PWD FA3LITE_BWD_MAX_CTAS=2 FA3LITE_CACHE_DIR=/tmp/fa3c PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 90 \
      compute-sanitizer --tool $tool --report-api-errors no python3 tools/race_bwd.py > $OUT/san_bwd_$tool.log 2>&1
    echo "race_bwd $tool rc=$? $(tail -n 1 $OUT/san_bwd_$tool.log) ok=$(grep -c ': ok' $OUT/san_bwd_$tool.log)"
  done
  exit 0
fi
ROOT=$OUT
OUT=$ROOT/ab AB_TREES="before=_vo fold=_fold pipe=." timeout 330 bash tools/ab_round.sh 3 --head-dim 64 \
  --seqlen 1k,4k,16k --mode bwd,det --soak-ms 200 > $ROOT/ab.log 2>&1; echo "ab rc=$?"
cat $ROOT/ab/ab_summary.txt
OUT=$ROOT bash tools/timeline_round.sh "before=_vo fold=_fold pipe=. pipe=. fold=_fold before=_vo" "64 1024 1" \
  "64 1024 0"
cd $ROOT && tar -czf logs_b.tgz ab.log ab timeline_*.txt && rm -rf ab timeline_*.txt
