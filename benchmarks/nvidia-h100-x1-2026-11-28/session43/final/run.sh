#!/usr/bin/env bash
# Session 43 final run with FA4 (tree of f9f9a07; the device's git metadata was the session start's,
# so results.json says 10e1a03-dirty: its source hash e42b87bb0a87a935 is f9f9a07's). Three device calls
# back to back on one warm H100 (FA4 staged with ../shared/tools/stage-fa4.sh, tools/stage_fa4_parts.sh):
#   carry .peers/p1: TEST_LIMIT=540 bash tools/speed_round.sh peers_part tests   (suite/)
#   carry .peers/p2: bash tools/speed_round.sh peers_part
#   carry .peers/p3: the line below
FINAL_DTYPES=bf16 FINAL_LIMIT=520 bash tools/speed_round.sh peers_last final
