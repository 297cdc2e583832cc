#!/usr/bin/env bash
# Session 44 features_fa4, FA4 staging calls 1-3 (carry .peers/p1, .peers/p2, .peers/p3), because
# features/ ran the bench in its own process after `speed_round.sh peers_last`, whose PYTHONPATH
# (FA4 in /tmp/site) did not reach it: FA4 "absent". Here the bench is a step of the same
# speed_round.sh process. Calls 1 and 2: `bash tools/speed_round.sh peers_part`; call 3:
BENCH_LIMIT=260 BENCH_ARGS="--mode fwd --head-dim 64,128,256 --causal both --seqlen 16k --impl fa3lite,cudnn,fa4 \
  --rounds 5 --no-compile-time --no-plots --no-host-time --time-budget 220" bash tools/speed_round.sh peers_last bench
tail -n 3 $OUT/bench.log
