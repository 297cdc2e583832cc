#!/usr/bin/env bash
# Session 36, final run call 2 of 2 (carry .peers/b, right after call 1): FA4 installed, then the final
# grid (tools/speed_round.sh final: bf16 forward and backward with the deterministic rows, feature rows
# and host table, 5 rotated rounds, then the fp16 backward), then the decode bench's host table with
# FA4 (--decode with a short time budget: the table is measured before the grid).
export OUT=${OUT:-/tmp/out}
FINAL_LIMIT=400 bash tools/speed_round.sh peers_b final
export PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:$PWD FA3LITE_CACHE_DIR=/tmp/fa3c
timeout 90 python3 -m fa3lite.bench --decode --time-budget 40 --no-plots \
  --out "$OUT/decode_host" > "$OUT/decode_host.log" 2>&1
echo "== decode host rc=$?"; grep -A12 -i "host" "$OUT/decode_host.log" | head -30
