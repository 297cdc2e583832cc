#!/usr/bin/env bash
# Session 28, ablate_round1: where the backward's block time goes, by removing one piece at a time
# (timing only: every ablated tree computes wrong gradients). Trees, each HEAD f040444 plus one edit:
#   _vnoexp  ex2.approx replaced by a multiply (no MUFU work in P^T)
#   _vnodq   dQ wgmma cut to one k-step of eight (the hand-off kept)
#   _vnosync no kDsFull barrier before dQ (dQ may read half-written dS^T)
#   _vnohand no dQ hand-off: no dQ tile stores to smem, no dq_full/dq_empty barriers, no writer warps
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
OUT=$OUT AB_TREES="head=_vh noexp=_vnoexp nodq=_vnodq nosync=_vnosync nohand=_vnohand" timeout 560 \
  bash tools/ab_round.sh 2 --head-dim 64,128 --seqlen 4k --mode bwd
