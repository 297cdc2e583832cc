#!/usr/bin/env bash
# Session 30, lpt_round2 (issue 8): lpt_round1 again with 5 alternating rounds (its d=128 causal
# cells moved -0.4..-1.9% inside a per-run spread of up to 15%).
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
AB_TREES="before=_vp after=." OUT=$OUT bash tools/ab_round.sh 5 --mode fwd --head-dim 64,128,256 --seqlen 1k,4k,16k
