#!/usr/bin/env bash
# Session 46 recheck (call 3 of 3 after peers_part p1 and p2; carry .peers/p3): the final run's
# d = 128 forward cells again with FA4 (bf16 ours 375 vs FA4 418 at causal 1k there; fp16 377 vs 358;
# ncu_fa4's single unthrottled launch ours 154 us vs FA4's 168). Same bench, 7 rotated rounds.
BENCH_LIMIT=200 BENCH_ARGS="--mode fwd --head-dim 128 --causal both --seqlen 1k,16k --impl fa3lite,cudnn,fa4 \
--rounds 7 --no-compile-time --no-plots --no-features --no-host-time --no-odd-check --time-budget 170" \
  bash tools/speed_round.sh peers_last bench
tar czf $OUT/bench.tgz -C $OUT bench && rm -rf $OUT/bench
grep -A12 "d mask" $OUT/bench.log | head -14; grep -i -A8 "clock\|power" $OUT/bench.log | head -20
