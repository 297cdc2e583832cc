#!/usr/bin/env bash
# Session 58, call 2 (RESULTS section 58), run as one inline command on call 1's warm machine,
# carry ["_vo", "_vt", "_ve0"]: _vo = HEAD's cuda_src and fa3lite, _vt = HEAD + the row max in four
# chains (session 57's next_round/fwd_max_tree.diff), _ve0 = _vt + call 1's NaN-propagating max and
# ex2_fma code with EXP2_EMU 0 (the emulation compiled out). "." becomes _ve0 for the debug tests.
#   1. debug build: the varlen, feature and kv-cache tests, as far as 150 s go
#   2. A/B before / tree / nan, forward, d 64 / 128 / 256, full and causal, 1k / 4k / 16k, 3 rounds
set -u; export PYTHONUNBUFFERED=1; ROOT=$OUT
rm -rf cuda_src fa3lite && cp -r _ve0/cuda_src _ve0/fa3lite .
OUT=$ROOT/debug_features DEBUG_LIMIT=150 DEBUG_K="" \
  DEBUG_TESTS="tests/test_varlen_gpu.py tests/test_features_gpu.py tests/test_kvcache_gpu.py" bash tools/speed_round.sh debug
OUT=$ROOT/ab AB_TREES="before=_vo tree=_vt nan=." timeout 380 bash tools/ab_round.sh 3 --mode fwd --head-dim 64,128,256 \
  --seqlen 1k,4k,16k --soak-ms 200 > $ROOT/ab.log 2>&1; echo "ab rc=$?"
cat $ROOT/ab/ab_summary.txt
cd $ROOT && tar -czf logs.tgz ab.log ab debug_features && rm -rf ab debug_features
