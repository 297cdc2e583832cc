#!/usr/bin/env bash
# Prepared in session 51, not run: call 2 of 3 of ncu_fa4 (carry .peers/p2); see ncu_fa4_a.sh.
set -u
bash tools/speed_round.sh peers_part
