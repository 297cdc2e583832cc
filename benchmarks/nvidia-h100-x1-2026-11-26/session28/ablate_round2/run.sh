#!/usr/bin/env bash
# Session 28, ablate_round2 (timing only, wrong gradients): do the two consumer warpgroups lose time
# by running in step? _vnohand (no dQ hand-off, as round 1) vs _vfree (that and no kDsFull barrier
# either: the warpgroups share only the Q/dO ring), both on HEAD f040444 (_vh).
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
OUT=$OUT AB_TREES="head=_vh nohand=_vnohand free=_vfree" timeout 400 bash tools/ab_round.sh 2 --head-dim 64,128 --seqlen 1k,4k --mode bwd
