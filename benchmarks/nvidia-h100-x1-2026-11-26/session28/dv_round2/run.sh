#!/usr/bin/env bash
# Session 28, dv_round2: dV's k-steps issued as their exp2s finish, second A/B (4 rounds, bwd only)
# vs HEAD f040444, then the release backward / training tests on the new tree.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
OUT=$OUT AB_TREES="head=_vh after=." timeout 300 bash tools/ab_round.sh 4 --head-dim 128 --seqlen 1k,4k,16k --mode bwd
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_bwd_gpu.py tests/test_training_gpu.py tests/test_varlen_gpu.py \
  > $OUT/tests.log 2>&1; echo "rc $?" >> $OUT/tests.log
tail -2 $OUT/tests.log
