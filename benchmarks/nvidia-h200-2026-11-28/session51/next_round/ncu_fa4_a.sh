#!/usr/bin/env bash
# Prepared in session 51, not run: FA4 beside ours under ncu at the two cells section 51's traces
# explain least -- the d = 256 causal 1k forward (ours 22% of a tile outside its loop) and the d = 128
# full 4k backward (FA4's grid, and its per-block rate where no wave tail weighs). Three calls back to
# back on one warm machine: this one (carry .peers/p1), ncu_fa4_b.sh (.peers/p2), ncu_fa4.sh (.peers/p3).
set -u
bash tools/speed_round.sh peers_part
