#!/usr/bin/env bash
# Session 42 bench_check: the bench after 2238470 (the grid's and the feature rows' rounds in one
# CaseTimings): the bench tests on the GPU, then README's main job with two rounds
# (`python -m fa3lite.bench --quick --rounds 2`: grid, feature rows and host table timed on the device).
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_bench.py tests/test_bench_features.py \
  tests/test_bench_decode.py > $OUT/bench_tests.log 2>&1
echo "== bench tests rc=$?"; tail -2 $OUT/bench_tests.log
timeout 330 python3 -m fa3lite.bench --quick --rounds 2 --out $OUT/quick > $OUT/quick.log 2>&1
echo "== quick bench rc=$?"; tail -40 $OUT/quick.log
