#!/bin/bash
# Session 27 final round, call 2 (call 1 copied .peers/a to /root/peers): FA4 4.0.0b36 installed; the
# bf16 grid with FA4, the deterministic rows, the feature rows (window, varlen, dense at equal tokens)
# and the interleaved host-time table.
cd "$(dirname "$0")/../../../.."
source .peers/b/install.sh > $OUT/install.log 2>&1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
git log --oneline -1 > $OUT/commit.txt 2>&1
timeout 560 python3 -m fa3lite.bench --mode fwd,bwd --head-dim 64,128,256 --causal both --seqlen 1k,4k,16k \
  --deterministic --impl fa3lite,cudnn,fa4 --no-compile-time --no-plots --time-budget 420 --out $OUT/bf16 \
  > $OUT/bf16.log 2>&1
echo "bench rc $?" >> $OUT/bf16.log
