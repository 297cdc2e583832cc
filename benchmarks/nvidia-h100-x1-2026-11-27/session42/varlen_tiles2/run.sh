#!/usr/bin/env bash
# Session 42 varlen_tiles2: varlen_tiles (no soak) read D = 128 full's varlen forward 1.045 / 1.057
# with 128x160 / 128x176 key blocks while its dense comparator read 0.957 / 0.901: clock drift. Again
# with tools/varlen_ab.py's new --soak-ms (200 ms before each measurement): base = _vo (HEAD), w160,
# w176 (D = 128's FWD_TILES, both masks, persistent pingpong), 3 rounds alternating.
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
AB_SCRIPT=tools/varlen_ab.py AB_TREES="base=_vo w160=_vw160 w176=_vw176" timeout 400 bash tools/ab_round.sh 3 \
  --head-dim 128 --mode fwd --repeats 3 --soak-ms 200 > $OUT/round.log 2>&1
cat $OUT/ab_summary.txt
