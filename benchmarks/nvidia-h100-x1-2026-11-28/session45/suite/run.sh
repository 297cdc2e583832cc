#!/usr/bin/env bash
# Session 45 suite (device call 2 of 3; carry .peers/p2): the GPU test suite (-m gpu, release build)
# on this tree, whose eager backward node now takes its gradients from one allocation.
TEST_LIMIT=520 bash tools/speed_round.sh peers_part tests
tail -n 3 $OUT/gpu_tests.log
