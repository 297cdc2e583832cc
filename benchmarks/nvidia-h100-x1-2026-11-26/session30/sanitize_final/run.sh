#!/usr/bin/env bash
# Session 30, sanitize_final: compute-sanitizer synccheck and memcheck over tools/sanitize_grid.py
# --quick (forward and backward, every head dim, dtype, mask, MHA/MQA, strided views, every gradient
# subset and deterministic mode) on the final kernels (af532a1).
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
for tool in synccheck memcheck; do
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool $tool --report-api-errors no \
    python3 tools/sanitize_grid.py --quick > $OUT/san_$tool.log 2>&1
  echo "$tool rc $?: $(tail -1 $OUT/san_$tool.log) / $(grep -c 'cases\|done' $OUT/san_$tool.log)"
  grep -m3 "done\|cases" $OUT/san_$tool.log
done
