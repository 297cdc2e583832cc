#!/usr/bin/env bash
# Session 46 fp16 grid with FA4 (call 4, right after final/'s three on the same warm H200; carry
# .peers/p3 again, which installs FA4 for this invocation from the parts in /root/peers).
BENCH_LIMIT=420 BENCH_ARGS="--mode fwd,bwd --head-dim 64,128,256 --causal both --seqlen 1k,4k,16k --dtype fp16 \
--impl fa3lite,cudnn,fa4 --rounds 5 --no-compile-time --no-plots --no-features --no-host-time --time-budget 380" \
  bash tools/speed_round.sh peers_last bench
tar czf $OUT/bench.tgz -C $OUT bench && rm -rf $OUT/bench
grep -A60 "d mask" $OUT/bench.log | head -70
