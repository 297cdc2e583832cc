#!/usr/bin/env bash
# Session 37, call 2 of the FA4 pair (call 1: `bash tools/speed_round.sh peers_a`, carry .peers/a):
# the sequence lengths the final runs leave out (issue 8 asks for S = 512, 2k, 8k too), forward and
# backward, bf16, FA4 staged; one tarball back.
set -u
export PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c PYTHONPATH=$PWD:${PYTHONPATH:-}
source .peers/b/install.sh > "$OUT/install.log" 2>&1; echo "== FA4 installed rc=$?"
mkdir -p "$OUT/full"
timeout 420 python3 -m fa3lite.bench --mode fwd,bwd --head-dim 64,128,256 --causal both --seqlen 512,2k,8k \
  --impl fa3lite,cudnn,fa4 --rounds 5 --no-compile-time --no-plots --no-features --no-host-time \
  --time-budget 380 --out "$OUT/full/bf16" > "$OUT/full/bf16.log" 2>&1
echo "== full bf16 rc=$?"
tar czf "$OUT/full.tgz" -C "$OUT" full && rm -rf "$OUT/full"
