#!/usr/bin/env bash
# Next round's first device call for fwd_mask_bits.diff (prepared in session 46, not measured). Before
# the call, on the CPU: `git apply benchmarks/nvidia-h200-2026-11-28/session46/next_round/fwd_mask_bits.diff`
# and `rm -rf _vo && mkdir _vo && git archive HEAD cuda_src fa3lite tools | tar -x -C _vo`; carry ["_vo"].
#  1. A/B before (_vo) / after (.), forward, d 64/128/256, 1k/4k/16k, both masks, 3 rounds.
#  2. Debug build (bounded waits, NaN-poisoned buffers): the forward, varlen, feature and KV-cache GPU
#     tests (windows, offsets, odd lengths, sinks, softcap, the split kernel: all go through Mask::apply).
#  3. compute-sanitizer racecheck and memcheck over tools/fwd_sanitize.py.
set -u
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
export PYTHONUNBUFFERED=1
AB_TREES="before=_vo after=." timeout 200 bash tools/ab_round.sh 3 --head-dim 64,128,256 --seqlen 1k,4k,16k \
  --mode fwd --soak-ms 200 > $OUT/ab.log 2>&1; echo "ab rc=$?"; cat $OUT/ab_summary.txt
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 260 python3 -m pytest -q -x -p no:cacheprovider \
  tests/test_fwd_gpu.py tests/test_varlen_gpu.py tests/test_features_gpu.py tests/test_kvcache_gpu.py > $OUT/debug_tests.log 2>&1
echo "debug tests rc=$?"; tail -2 $OUT/debug_tests.log
for tool in racecheck memcheck; do
  PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_after PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 80 compute-sanitizer \
    --tool $tool --report-api-errors no python3 tools/fwd_sanitize.py > $OUT/san_$tool.log 2>&1
  echo "fwd_sanitize $tool rc=$? $(tail -n 1 $OUT/san_$tool.log)"
done
