#!/usr/bin/env bash
# Session 57, call 5 (carry .peers/p4, which installs FA4 for this invocation): the final grid on the
# code of 1013c06 (main's code since session 55's racecheck fix), bf16 fwd and bwd with the
# deterministic rows, d 64/128/256, both masks, 1k/4k/16k, fa3lite / cuDNN / FA4 in 5 rotated rounds,
# feature rows and host table (tools/speed_round.sh final), as session 55's call 4.
FINAL_DTYPES=bf16 FINAL_LIMIT=500 bash tools/speed_round.sh peers_last final
tar xzf $OUT/final.tgz -O final/bf16.log 2>/dev/null | grep -A40 "d mask" | head -60
