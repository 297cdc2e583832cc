#!/usr/bin/env bash
# Session 40 round5 (also FA4 staging call 1 of 3: tools/stage_fa4_parts.sh's first part to
# /root/peers). round4's tree still read D = 64 full 1.5% slower: its writer, split into a visit
# function, moved the consumers' SASS. Now the visit function takes the loop's invariants and its
# `again` as a callable evaluated where the loop evaluated it, and the fixed-length kernels' consumer
# SASS equals 82e6c20's (registers renamed; small reorderings in the producer and writer). A/B against
# 82e6c20 (_vo): tools/ab_round.sh, 3 rounds, D = 64 / 128 backward; varlen_ab 2 rounds; debug-build
# varlen, GQA and deterministic tests; memcheck over tools/race_bwd.py.
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}
export PYTHONUNBUFFERED=1
bash tools/speed_round.sh peers_part
AB_TREES="before=_vo after=." timeout 200 bash tools/ab_round.sh 3 --head-dim 64,128 --seqlen 1k,4k,16k --mode bwd
for round in 1 2; do
  for lengths in 2341,2341,2341,2341,2341,2341,2341 3970,2089,3616,2234,677,1572,2226; do
    for pair in before=_vo after=.; do
      (cd "${pair#*=}" && PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_${pair%%=*} timeout 60 python3 \
        "$OLDPWD/tools/varlen_ab.py" --tag "${pair%%=*}" --head-dim 128,256 --repeats 3 --reps 10 --mode bwd \
        --lengths $lengths | sed "s/^{/{\"lengths\": \"${lengths:0:9}\", /") >> $OUT/varlen.jsonl 2>> $OUT/varlen.err
    done
  done
done
python3 tools/ab_summary.py $OUT/varlen.jsonl before after | tee $OUT/varlen_summary.txt
export PYTHONPATH=$PWD
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3d timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu -rf \
  --tb=short --maxfail=5 tests/test_varlen_gpu.py tests/test_bwd_gpu.py -k "grouped or determin or varlen" > $OUT/debug.log 2>&1
echo "debug tests rc=$? $(tail -n1 $OUT/debug.log)"
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 compute-sanitizer --tool memcheck --report-api-errors no --print-limit 10 \
  python3 tools/race_bwd.py > $OUT/race_memcheck.log 2>&1
echo "race_bwd memcheck rc=$? $(tail -n1 $OUT/race_memcheck.log) $(grep -c ': ok' $OUT/race_memcheck.log) ok"
tar -czf $OUT/logs.tgz -C $OUT debug.log varlen.err ab.err race_memcheck.log 2>/dev/null
rm -f $OUT/debug.log $OUT/varlen.err $OUT/ab.err $OUT/race_memcheck.log
