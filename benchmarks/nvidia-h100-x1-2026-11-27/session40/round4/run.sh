#!/usr/bin/env bash
# Session 40 round4: round3 read the flat dQ-writer walk 5% slower at D = 64 causal 4k (fixed
# lengths; the whole kernel's SASS had moved). The writer now takes the flat walk only in varlen
# variants (the fixed-length kernels' consumer loop is again the SASS of 82e6c20, registers renamed),
# and the varlen producer no longer prefetches its maps after the acquire. A/B against 82e6c20 (_vo):
# tools/ab_round.sh, 3 rounds, D = 64 / 128 backward, both masks, 1k / 4k / 16k; then varlen_ab on
# equal lengths and the bench's batch, 2 rounds; then the debug-build varlen and GQA tests.
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
AB_TREES="before=_vo after=." timeout 240 bash tools/ab_round.sh 3 --head-dim 64,128 --seqlen 1k,4k,16k --mode bwd
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
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3d PYTHONPATH=$PWD timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu -rf \
  --tb=short --maxfail=5 tests/test_varlen_gpu.py tests/test_bwd_gpu.py -k "grouped or determin or varlen" > $OUT/debug.log 2>&1
echo "debug tests rc=$? $(tail -n1 $OUT/debug.log)"
