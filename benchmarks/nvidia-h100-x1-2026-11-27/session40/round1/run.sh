#!/usr/bin/env bash
# Session 40 round1: the varlen backward's sequence maps built once per sequence by the preprocess
# (bwd_preprocess.cu write_seq_maps) instead of by every main-kernel CTA before its first load.
# The dQ writer's walk over the tile's visits is now one flat count (the varlen walking variants
# spilled 16 bytes in the 24-register writer after the change above). Debug-build backward and varlen
# GPU tests (bounded mbarrier waits, NaN-poisoned buffers), then A/B against 82e6c20 (_vo) in
# alternating processes: equal lengths (7 x 2341) and the bench's batch, D = 128 / 256, backward
# alone (varlen and its dense comparator), two rounds; then compute-sanitizer over tools/race_bwd.py
# (now with GQA forced-grouped and varlen calls).
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}
python3 -m pip install -q -e ".[test,bench]" > /dev/null 2>&1
export PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3d timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -rf --tb=short \
  --maxfail=5 tests/test_varlen_gpu.py tests/test_bwd_gpu.py -k "grouped or determin or varlen" > $OUT/debug.log 2>&1
echo "debug tests rc=$? $(tail -n1 $OUT/debug.log)"
for round in 1 2; do
  for lengths in 2341,2341,2341,2341,2341,2341,2341 3970,2089,3616,2234,677,1572,2226; do
    for pair in before=_vo after=.; do
      (cd "${pair#*=}" && PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_${pair%%=*} timeout 60 python3 \
        "$OLDPWD/tools/varlen_ab.py" --tag "${pair%%=*}" --head-dim 128,256 --repeats 3 --reps 10 --mode bwd \
        --lengths $lengths | sed "s/^{/{\"lengths\": \"${lengths:0:9}\", /") >> $OUT/ab.jsonl 2>> $OUT/ab.err
    done
  done
  echo "ab round $round done"
done
python3 tools/ab_summary.py $OUT/ab.jsonl before after | tee $OUT/ab_summary.txt
for tool in memcheck racecheck; do
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 110 compute-sanitizer --tool $tool --report-api-errors no --print-limit 10 \
    python3 tools/race_bwd.py > $OUT/race_$tool.log 2>&1
  echo "race_bwd $tool rc=$? $(tail -n1 $OUT/race_$tool.log) $(grep -c ': ok' $OUT/race_$tool.log) ok"
done
tar -czf $OUT/logs.tgz -C $OUT debug.log ab.err race_memcheck.log race_racecheck.log 2>/dev/null
rm -f $OUT/debug.log $OUT/ab.err $OUT/race_*.log
