#!/usr/bin/env bash
# Session 40 round6 (FA4 staging call 2 of 3): round5 read D = 128 causal at 0.85-0.88 of 82e6c20 at
# 1k / 4k, one round of three, with the machine's clock falling between rounds; four more rounds of
# that cell alone (the fixed-length consumer SASS of the two trees is the same).
#   bash tools/speed_round.sh peers_part && AB_TREES="before=_vo after=." OUT=$OUT timeout 150 \
#     bash tools/ab_round.sh 4 --head-dim 128 --masks causal --seqlen 1k,4k,16k --mode bwd
