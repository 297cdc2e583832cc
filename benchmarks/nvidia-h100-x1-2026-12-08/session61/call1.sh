#!/usr/bin/env bash
# Session 61, call 1 (prepared; the device lent no machine this session): the overlapped forward waits
# for the P.V GEMM among its exp2s (FA4's order), fwd_early_wait.diff. Here, before the call:
#   git apply benchmarks/nvidia-h100-x1-2026-12-08/session61/fwd_early_wait.diff
#   rm -rf _vo && mkdir _vo && git archive HEAD cuda_src fa3lite | tar -x -C _vo
# then run this with carry ["_vo"]. Trees: _vo = HEAD (the wait after all exp2s), . = 1/8 of a
# thread's scores exponentiated before the wait, the rest after it with P's packs between the MUFUs;
# _v8 and _va (made here by make_trees.sh) = 1/16 early, and 1/8 early with O rescaled every block.
# Debug forward tests and synccheck on this tree, then a 4-tree A/B (3 rounds, fwd, d = 64/128/256).
set -u
ROOT=$OUT
bash benchmarks/nvidia-h100-x1-2026-12-08/session61/make_trees.sh
OUT=$ROOT/debug DEBUG_LIMIT=170 DEBUG_TESTS=tests/test_fwd_gpu.py DEBUG_K="" bash tools/speed_round.sh debug
export PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 90 compute-sanitizer --tool synccheck --report-api-errors no \
  python3 tools/fwd_sanitize.py > $ROOT/synccheck.log 2>&1; echo "== synccheck rc=$?"; tail -n 3 $ROOT/synccheck.log
OUT=$ROOT AB_TREES="before=_vo e16=. e8=_v8 always=_va" timeout 330 bash tools/ab_round.sh 3 --mode fwd \
  --head-dim 64,128,256 --seqlen 1k,4k,16k --soak-ms 200 > $ROOT/ab.log 2>&1; echo "== ab rc=$?"; tail -n 20 $ROOT/ab.log
