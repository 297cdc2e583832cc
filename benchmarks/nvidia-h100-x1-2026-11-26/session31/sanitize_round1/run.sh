#!/usr/bin/env bash
# Session 31, sanitize_round1: compute-sanitizer over the backward's new barriers (per-warpgroup dQ
# hand-off, the one dS^T buffer's read announcements, the three-stage ring): racecheck and synccheck
# over tools/race_bwd.py (every layout, both masks, deterministic; D = 64 causal 1300 runs three
# stages), then synccheck and memcheck over tools/sanitize_grid.py --quick. Tree of 82c94b5 + the
# race_bwd.py case.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
for tool in racecheck synccheck; do
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --tool $tool --report-api-errors no \
    python3 tools/race_bwd.py > $OUT/race_bwd_$tool.log 2>&1
  echo "race_bwd $tool rc $?: $(grep -c ': ok' $OUT/race_bwd_$tool.log) ok; $(tail -1 $OUT/race_bwd_$tool.log)"
done
for tool in synccheck memcheck; do
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 170 compute-sanitizer --tool $tool --report-api-errors no \
    python3 tools/sanitize_grid.py --quick > $OUT/grid_$tool.log 2>&1
  echo "grid $tool rc $?: $(grep -m1 'sanitize grid done' $OUT/grid_$tool.log); $(tail -1 $OUT/grid_$tool.log)"
done
