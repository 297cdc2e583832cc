#!/usr/bin/env bash
# Session 30, grid_round1 (issue 8): d=128 full masks from 8k keys ran one CTA per tile (+3..4% over
# the persistent grid at 16k, section 23); with two Q buffers, the deferred O read and the per-warpgroup
# hand-off, again: this tree vs _vr (the persistent 128 x 128 tile at every length), 6 rounds, d=128.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
AB_TREES="now=. persistent=_vr" OUT=$OUT bash tools/ab_round.sh 6 --mode fwd --head-dim 128 --seqlen 4k,8k,16k
