#!/usr/bin/env bash
# Session 30, qstages_round3: qstages_round2 read d=128 full 4k/16k at 0.95/0.93 with per-run spreads
# of up to 10%. Three trees alternating, d=64/128, 6 rounds: fa34869 (_vp), two Q buffers alone (_vq:
# this tree with the P.V wait as before), this tree (the wait in the always-taken branch).
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
AB_TREES="before=_vp qbuf=_vq after=." OUT=$OUT bash tools/ab_round.sh 6 --mode fwd --head-dim 64,128 --seqlen 1k,4k,16k
