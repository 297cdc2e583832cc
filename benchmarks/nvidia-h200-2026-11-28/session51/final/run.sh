#!/usr/bin/env bash
# Session 51 final run with FA4, call 3 of 3 (carry .peers/p3, which installs FA4 for this invocation):
# the bf16 grid, fwd and bwd (and deterministic), d 64/128/256, both masks, 1k/4k/16k, fa3lite / cuDNN /
# FA4 in 5 rotated rounds, with the host table and the feature rows (tools/speed_round.sh final).
FINAL_DTYPES=bf16 FINAL_LIMIT=500 bash tools/speed_round.sh peers_last final
tar xzf $OUT/final.tgz -O final/bf16.log 2>/dev/null | grep -A40 "d mask" | head -60
