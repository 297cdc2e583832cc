#!/usr/bin/env bash
# Prepared for the next session (RESULTS section 56, "Next form, prepared"): the folded dQ with the
# converter's half blocks written by one tensor store each (fold_dq_tmastore.diff, on main at fffa3b7),
# where section 56's form issued 64 bulk stores of single rows a half and lost 3-27%.
# Set-up on the CPU side (project root, diff not yet applied):
#   rm -rf _vo && mkdir _vo && git archive HEAD cuda_src fa3lite | tar -x -C _vo
#   git apply benchmarks/nvidia-h100-x1-2026-12-07/session56/next_round/fold_dq_tmastore.diff
#   python3 -m pytest -q tests/test_bwd_compile.py -k 64 tests/test_plans.py
# Then one call, carry ["_vo"], `bash <this>` (~400 s; section 56's call 1, of the same steps with three
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
# The debug tests and the sanitizers are tools/speed_round.sh's debug and race steps (each with its own
# OUT folder: the step names its log alike every time).
OUT=$ROOT/debug DEBUG_TESTS=tests/test_bwd_gpu.py DEBUG_K="" bash tools/speed_round.sh debug
OUT=$ROOT/debug_cap3 FA3LITE_BWD_MAX_CTAS=3 DEBUG_LIMIT=90 DEBUG_TESTS=tests/test_bwd_gpu.py DEBUG_K="fold or 64" \
  bash tools/speed_round.sh debug
OUT=$ROOT/ab AB_TREES="before=_vo tma=." timeout 200 bash tools/ab_round.sh 3 --head-dim 64 \
  --seqlen 1k,4k,16k --mode bwd --soak-ms 200 > $ROOT/ab.log 2>&1; echo "ab rc=$?"
cat $ROOT/ab/ab_summary.txt
OUT=$ROOT bash tools/timeline_round.sh "before=_vo tma=. tma=. before=_vo" "64 4096 0" "64 1024 1" 2>&1 | cut -c1-400
OUT=$ROOT/race FA3LITE_BWD_MAX_CTAS=2 RACE_TOOLS="racecheck synccheck" bash tools/speed_round.sh race
OUT=$ROOT/debug_training DEBUG_LIMIT=60 DEBUG_TESTS=tests/test_training_gpu.py DEBUG_K="" bash tools/speed_round.sh debug
cd $ROOT && tar -czf logs.tgz ab.log ab timeline_*.txt debug debug_cap3 race debug_training && \
  rm -rf ab timeline_*.txt debug debug_cap3 race debug_training
