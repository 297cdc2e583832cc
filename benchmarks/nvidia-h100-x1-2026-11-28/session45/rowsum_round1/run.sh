#!/usr/bin/env bash
# Session 45 rowsum_round1. The forward's row sums on the tensor cores: L += P 1 as an m64n8 wgmma
# beside O += P V (B = a 1 KB block of ones in shared memory), rescaled with O, instead of one FADD
# per score in the exp2 loop (SASS: the D = 128 full loop 625 -> 576 instructions, D = 64 582 -> 530;
# 8 more HGMMA a key block). Under the board's power limit fewer instructions may mean a higher clock.
#  1. debug build (bounded waits, NaN-poisoned outputs): forward, kv-cache (split kernels), feature
#     and varlen GPU tests, -x, as far as 200 s go;
#  2. A/B against HEAD (_vo = git archive of 1be2703's cuda_src fa3lite tools: the forward kernels as at HEAD), forward, 3 rounds
#     alternating, 200 ms soak: d 64/128/256 x full/causal x 1k/4k/16k.
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 200 python3 -m pytest -q -x -p no:cacheprovider \
  tests/test_fwd_gpu.py tests/test_kvcache_gpu.py tests/test_features_gpu.py tests/test_varlen_gpu.py > $OUT/debug_tests.log 2>&1
echo "debug tests rc=$?"; tail -3 $OUT/debug_tests.log
AB_TREES="before=_vo after=." timeout 330 bash tools/ab_round.sh 3 --head-dim 64,128,256 --seqlen 1k,4k,16k \
  --mode fwd --soak-ms 200 > $OUT/round.log 2>&1
cat $OUT/ab_summary.txt
