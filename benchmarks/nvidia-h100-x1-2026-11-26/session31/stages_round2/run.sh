#!/usr/bin/env bash
# Session 31, stages_round2: stages_round1's third Q/dO stage (D = 64, 128-query steps, with dQ), now
# with banded masks over at most 8 query blocks keeping two (BwdVariant.short_ring), A/B vs 1cf1140
# (_vp), 4 rounds, bwd and deterministic bwd at d=64 (1k, 2k, 4k, 16k); then debug-build D = 64
# backward/training tests (both ring depths: 4224-long causal cases take three) and the
# deterministic stress run (4k: three stages).
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
OUT=$OUT AB_TREES="head=_vp after=." timeout 330 bash tools/ab_round.sh 4 --head-dim 64 --seqlen 1k,2k,4k,16k --mode bwd,det
FA3LITE_DEBUG=1 timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/test_bwd_gpu.py tests/test_training_gpu.py \
  tests/test_varlen_gpu.py -k "64" > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
tail -2 $OUT/tests_debug.log
timeout 40 python3 tools/det_stress.py --head-dim 64 --runs 20 > $OUT/det_stress.log 2>&1; echo "det_stress rc $?"
tail -2 $OUT/det_stress.log
