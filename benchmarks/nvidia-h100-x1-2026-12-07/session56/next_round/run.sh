#!/usr/bin/env bash
# Prepared for the next session (RESULTS section 56, "Next form, prepared"): the folded dQ with the
# converter's half blocks written by one tensor store each (fold_dq_tmastore.diff, on main at fffa3b7),
# where section 56's form issued 64 bulk stores of single rows a half and lost 3-27%.
# Set-up on the CPU side (project root, diff not yet applied):
#   rm -rf _vo && mkdir _vo && git archive HEAD cuda_src fa3lite | tar -x -C _vo
#   git apply benchmarks/nvidia-h100-x1-2026-12-07/session56/next_round/fold_dq_tmastore.diff
#   python3 -m pytest -q tests/test_bwd_compile.py -k 64 tests/test_plans.py
# Then one call, carry ["_vo"], `bash <this>` (~330 s; section 56's call 1, of the same steps with three
# trees, took 212 s):
#   1. debug build (bounded waits, NaN-poisoned dq): the backward tests (test_folded_dq among them),
#      then with 3 CTAs
#   2. A/B before (_vo) / tma (.), backward at d = 64, 1k / 4k / 16k, full and causal, 3 rounds
#   3. the main kernel's length, both trees, d = 64 full 4k and causal 1k (section 56's probes: HEAD
#      453 / 2443-2490 us on H100; the floor without conversion 455 / ~2750)
#   4. racecheck and synccheck over tools/race_bwd.py with 2 CTAs; the training tests (debug)
# If the new form reads >= 1.00 everywhere, land it (its debug tests and sanitizers are here); if it
# still loses, the probes of section 56 (probes.py) built on it say where.
set -u
export PYTHONUNBUFFERED=1
ROOT=$OUT
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 150 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_bwd_gpu.py > $ROOT/debug_bwd.log 2>&1
echo "debug bwd tests rc=$? $(tail -n 1 $ROOT/debug_bwd.log)"
PYTHONPATH=$PWD FA3LITE_BWD_MAX_CTAS=3 FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 90 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_bwd_gpu.py -k "fold or 64" > $ROOT/debug_bwd_cap3.log 2>&1
echo "debug bwd tests (d = 64), 3 CTAs rc=$? $(tail -n 1 $ROOT/debug_bwd_cap3.log)"
OUT=$ROOT/ab AB_TREES="before=_vo tma=." timeout 200 bash tools/ab_round.sh 3 --head-dim 64 \
  --seqlen 1k,4k,16k --mode bwd --soak-ms 200 > $ROOT/ab.log 2>&1; echo "ab rc=$?"
cat $ROOT/ab/ab_summary.txt
OUT=$ROOT bash tools/timeline_round.sh "before=_vo tma=. tma=. before=_vo" "64 4096 0" "64 1024 1" 2>&1 | cut -c1-400
for tool in racecheck synccheck; do
  PYTHONPATH=$PWD FA3LITE_BWD_MAX_CTAS=2 FA3LITE_CACHE_DIR=/tmp/fa3c PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 \
    compute-sanitizer --tool $tool --report-api-errors no python3 tools/race_bwd.py > $ROOT/san_bwd_$tool.log 2>&1
  echo "race_bwd $tool rc=$? $(tail -n 1 $ROOT/san_bwd_$tool.log) ok=$(grep -c ': ok' $ROOT/san_bwd_$tool.log)"
done
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 60 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_training_gpu.py > $ROOT/debug_training.log 2>&1
echo "debug training tests rc=$? $(tail -n 1 $ROOT/debug_training.log)"
cd $ROOT && tar -czf logs.tgz ab.log ab timeline_*.txt && rm -rf ab timeline_*.txt
