#!/usr/bin/env bash
# Session 44 maps_round1. The persistent varlen forward made its three sequence maps (q, k, v copies
# cut at the sequence's end) for every tile with keys: copies, tensormap.replace and a release /
# acquire through the tensor-map proxy ahead of the tile's first load. Now a CTA's tiles of the
# sequence whose maps it made last reuse them (scheduler.cuh SeqMapSets). A/B against HEAD (_vo,
# d5c99c4, with the longest-first order):
#  1. the bench's batch, both masks, d 64/128/256, 3 rounds, 200 ms soak;
#  2. debug-build varlen, kvcache and property GPU tests on this tree;
#  3. tools/varlen_sanitize.py (18 sequences of 0..1500 tokens, both orders) plain, then under
#     memcheck and racecheck (--quick).
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
AB_SCRIPT=tools/varlen_ab.py AB_TREES="before=_vo after=." timeout 260 bash tools/ab_round.sh 3 \
  --head-dim 64,128,256 --repeats 3 --soak-ms 200 > $OUT/round.log 2>&1
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 200 python3 -m pytest -q -x -p no:cacheprovider \
  tests/test_varlen_gpu.py tests/test_kvcache_gpu.py tests/test_features_property_gpu.py > $OUT/debug_tests.log 2>&1
echo "debug tests rc=$?" >> $OUT/debug_tests.log
timeout 60 python3 tools/varlen_sanitize.py > $OUT/sanitize_plain.log 2>&1; echo "rc=$?" >> $OUT/sanitize_plain.log
for tool in memcheck racecheck; do
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 60 compute-sanitizer --tool $tool python3 tools/varlen_sanitize.py --quick \
    > $OUT/sanitize_$tool.log 2>&1; echo "rc=$?" >> $OUT/sanitize_$tool.log
done
tail -3 $OUT/debug_tests.log; tail -2 $OUT/sanitize_*.log
cat $OUT/ab_summary.txt
