#!/usr/bin/env bash
# Session 32, lse_round3: D = 64 backward, three trees, 4 rounds, bwd at 1k/4k/16k both masks:
# head (_vp, HEAD), lse (".": kLseAfterDpt, the LSE loads after the dP^T wgmmas at 128-query steps
# only; D = 128's SASS is HEAD's), early (_vq: at 128-query steps dO waited for right after Q, the
# LSE loads ahead of both wgmma groups).
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
OUT=$OUT AB_TREES="head=_vp lse=. early=_vq" timeout 420 bash tools/ab_round.sh 4 --head-dim 64 --seqlen 1k,4k,16k --mode bwd
