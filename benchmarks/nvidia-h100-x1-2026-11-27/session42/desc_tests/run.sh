#!/usr/bin/env bash
# Session 42 desc_tests: the release build's forward and backward GPU tests on the descriptor change
# (369fe7e's tree), in the device time that was left (the command as it ran, from the repo root).
mkdir -p $OUT && export PYTHONPATH=$PWD && timeout 140 python3 -m pytest -q -x -p no:cacheprovider \
  tests/test_bwd_gpu.py tests/test_fwd_gpu.py > $OUT/tests.log 2>&1; echo "rc=$?"; tail -3 $OUT/tests.log
