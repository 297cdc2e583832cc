#!/usr/bin/env bash
# Session 45 fp16 grid with FA4 (device call 3 of 3; carry .peers/p3, which installs FA4 for the
# bench step of the same invocation). Forward and backward, d 64/128/256, both masks, 1k/4k/16k,
# fp16, fa3lite / cuDNN / FA4 in 5 rotated rounds. The dense kernels are those of section 43's bf16
# final run (f9f9a07; only the varlen forward and host code changed since).
BENCH_LIMIT=540 BENCH_ARGS="--mode fwd,bwd --head-dim 64,128,256 --causal both --seqlen 1k,4k,16k --dtype fp16 \
--impl fa3lite,cudnn,fa4 --rounds 5 --no-compile-time --no-plots --no-features --no-host-time --time-budget 480" \
  bash tools/speed_round.sh peers_last bench
tar czf $OUT/bench.tgz -C $OUT bench && rm -rf $OUT/bench
grep -B2 -A60 "d mask" $OUT/bench.log | head -80
