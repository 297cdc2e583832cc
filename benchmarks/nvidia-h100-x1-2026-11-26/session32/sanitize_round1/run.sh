#!/usr/bin/env bash
# Session 32, sanitize_round1: compute-sanitizer on the final tree (the LSE loads' new place in both
# backward consumers): racecheck and synccheck over tools/race_bwd.py, synccheck and memcheck over
# tools/sanitize_grid.py --quick (as session 31's sanitize_round1).
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
