#!/usr/bin/env bash
# Session 32, speed_round_check: tools/speed_round.sh's new steps (debug, det, race, ncu) run once on
# the final tree, so later rounds can call them instead of copying these blocks into each run.sh.
cd "$(dirname "$0")/../../../.."
OUT=$OUT DEBUG_K="64 and causal" DET_DIMS=64 NCU_CASES="bwd 64 4096 0 fa3lite" \
  timeout 560 bash tools/speed_round.sh debug det race ncu bogus
# Second call (after the ncu step got its per-mode kernel filter): the ncu step alone.
# OUT=$OUT NCU_CASES="bwd 64 4096 0 fa3lite;fwd 128 4096 1 fa3lite" timeout 400 bash tools/speed_round.sh ncu
