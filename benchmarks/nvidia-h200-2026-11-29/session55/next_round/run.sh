#!/usr/bin/env bash
# Prepared for the next session (RESULTS section 55, "Prepared, not run"): fold_dq.diff, the backward's
# postprocess folded into the D = 64 main kernel. Never run on a GPU yet.
# Set-up on the CPU side (project root, the diff not yet applied):
#   rm -rf _vo && mkdir _vo && git archive HEAD cuda_src fa3lite | tar -x -C _vo
#   git apply benchmarks/nvidia-h200-2026-11-29/session55/next_round/fold_dq.diff
#   python3 -m pytest -q tests/test_bwd_compile.py -k 64 tests/test_plans.py   (and under NVRTC 13.0.88)
# Then two calls with carry ["_vo"]: `bash <this> a` (correctness, ~400 s), then `bash <this> b` (speed,
# ~420 s). Both back to back is not needed (no FA4).
#   a. Debug build (bounded waits, NaN-poisoned dq): the backward tests (test_folded_dq among them:
#      one CTA walking every tile wraps the converter's queue), again with 3 CTAs; the training tests;
#      racecheck and synccheck over tools/race_bwd.py with 2 CTAs.
#   b. A/B before (_vo) / fold, the backward at d = 64, 1k / 4k / 16k, both masks, 3 rounds, its
#      deterministic mode too (it keeps the postprocess: should read 1.00); the call's kernels
#      (call_timeline) at d = 64 causal 1k and full 1k on both trees: the main kernel's length
#      against the postprocess's ~50 us it replaces. What to look for if the fold loses: the writer
#      now waits for every visit's adds to land before its count-down (wait_group 0 + an acq_rel
#      atomic, ~2 round trips to L2 per visit, one dQ buffer); ncu's stall samples on the writer's
#      wait for dq_full / the consumers' dq_empty would show it. The pipelined form (count down the
#      previous visit after issuing the next one's reduce) is the next step then.
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
OUT=$ROOT/ab AB_TREES="before=_vo fold=." timeout 300 bash tools/ab_round.sh 3 --head-dim 64 \
  --seqlen 1k,4k,16k --mode bwd,det --soak-ms 200 > $ROOT/ab.log 2>&1; echo "ab rc=$?"
cat $ROOT/ab/ab_summary.txt
OUT=$ROOT bash tools/timeline_round.sh "before=_vo fold=. fold=. before=_vo" "64 1024 1" "64 1024 0"
cd $ROOT && tar -czf logs_b.tgz ab.log ab timeline_*.txt && rm -rf ab timeline_*.txt
