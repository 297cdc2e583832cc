#!/usr/bin/env bash
# Session 41 final run with FA4 on 1743828 (kernels as 7f0db71; the bench's feature rows now in 5
# rotated rounds). Three device calls back to back:
#   1 (carry .peers/p1): bash run.sh 1   -- part 1, and the bench's tests on the GPU
#   2 (carry .peers/p2): bash run.sh 2   -- part 2
#   3 (carry .peers/p3): bash run.sh 3   -- install FA4, bf16 grid + feature rows + host table
set -u
case "$1" in
  1) bash tools/speed_round.sh peers_part
     PYTHONPATH=$PWD timeout 200 python3 -m pytest -q tests/test_bench_features.py tests/test_bench.py \
       > $OUT/bench_tests.log 2>&1; echo "== bench tests rc=$?"; tail -3 $OUT/bench_tests.log ;;
  2) bash tools/speed_round.sh peers_part ;;
  3) FINAL_DTYPES=bf16 FINAL_LIMIT=520 bash tools/speed_round.sh peers_last final ;;
esac
