#!/usr/bin/env bash
# Prepared in session 50, not run: the D = 128 (and 96) backward with a partial dQ per consumer
# warpgroup (bwd128_partial_dq.diff): each warpgroup computes dQ (64 queries x 128) over its own 64 key
# rows and hands it to the writer warp on its own barriers, as D = 64's 64-query steps do, so the two
# warpgroups no longer meet per query block on kDsFull (section 28's ablation put that meeting at
# 7-12% of the D = 128 backward). Costs: two bulk reduces per block instead of one (at D = 64 twice
# the reduce traffic moved nothing, section 18), one dQ buffer (two do not fit: 209 KB with one), and
# no claims (dq_claims needs a tile over all keys), so the accumulator is zeroed again by the
# preprocess. Compiled in session 50: every D = 96/128 variant checked 0 spills, 0 stack.
# bwd128_partial_dq_claims.diff (the whole change against HEAD, this diff included) keeps the claims:
# ticket 0 stores the first partial tile and adds the second once the store has landed (bwd_dq.cuh
# write_dq_visit), so nothing is zeroed; hopper/bwd.py dq_claims for every narrow variant with dQ (D = 64
# softcap's 64-query steps too). Compiled: 0 spills (the 24-register writer included), ATOMG present.
# The claims diff carries tests/test_bwd_compile.py's changed policy and SASS counts (CPU: those tests, with
# the SASS checks of every bf16 D = 96/128 and softcap variant, 159 passed on the patched tree).
# Before the call (N = benchmarks/nvidia-h200-2026-11-28/session50/next_round):
#   rm -rf _vo _vp && mkdir _vo _vp && git archive HEAD cuda_src fa3lite | tar -x -C _vo
#   git archive HEAD cuda_src fa3lite | tar -x -C _vp && git apply --directory=_vp $N/bwd128_partial_dq.diff
#   git apply $N/bwd128_partial_dq_claims.diff      # the working tree: partial tiles with claims
# carry ["_vo", "_vp"].
set -u
export PYTHONUNBUFFERED=1
AB_TREES="before=_vo partial=_vp claims=." timeout 300 bash tools/ab_round.sh 3 --head-dim 128 \
  --seqlen 1k,4k,16k --mode bwd,det --soak-ms 200 > $OUT/ab.log 2>&1; echo "ab rc=$?"; cat $OUT/ab_summary.txt
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 120 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_bwd_gpu.py -k "128 or 96" > $OUT/debug_bwd.log 2>&1
echo "debug bwd tests rc=$?"; tail -2 $OUT/debug_bwd.log
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_after PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 90 compute-sanitizer \
  --tool racecheck --report-api-errors no python3 tools/race_bwd.py > $OUT/san_bwd_race.log 2>&1
echo "race_bwd racecheck rc=$? $(tail -n 1 $OUT/san_bwd_race.log)"
cd $OUT && tar -czf ab.tgz ab.log ab.jsonl ab.err && rm -f ab.log ab.jsonl ab.err
