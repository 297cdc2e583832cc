#!/usr/bin/env bash
# Session 44 features (FA4 staging call 3 of 3, carry .peers/p3): installs FA4, then the bench on
# cada8cb's kernels with FA4 and cuDNN: the 16k grid cells (fwd, bwd, deterministic) and the feature
# rows (varlen and window, where this session's varlen forward changes show), host table; one tarball.
set -u
export PYTHONPATH=$PWD
bash tools/speed_round.sh peers_last > $OUT/peers.log 2>&1
timeout 440 python3 -m fa3lite.bench --mode fwd,bwd --head-dim 64,128,256 --causal both --seqlen 16k \
  --deterministic --impl fa3lite,cudnn,fa4 --rounds 5 --no-compile-time --no-plots --time-budget 400 \
  --out $OUT/bench > $OUT/bench.log 2>&1
echo "bench rc=$?" >> $OUT/bench.log
tar czf $OUT/bench.tgz -C $OUT bench && rm -rf $OUT/bench
tail -n 2 $OUT/peers.log $OUT/bench.log
