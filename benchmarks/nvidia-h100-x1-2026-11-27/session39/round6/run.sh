#!/usr/bin/env bash
# Session 39 round6: round5 put the causal varlen main kernel at 1.07x the dense one's time at equal
# lengths (7 x 2341), the dense one launching its longest key blocks first (lpt_heads) and the
# varlen one not. The varlen backward with the same order (lpt_heads from the longest sequence):
# release varlen GPU tests, then one A/B round against 8e6f68a (_vo) on equal lengths and on the
# bench's batch (session 38 measured this order neutral there), D = 128 / 256.
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}
python3 -m pip install -q -e ".[test,bench]" > /dev/null 2>&1
export PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
timeout 90 python3 -m pytest -q -p no:cacheprovider -m gpu -rf --tb=short -x tests/test_varlen_gpu.py > $OUT/varlen_tests.log 2>&1
echo "varlen tests rc=$? $(tail -n1 $OUT/varlen_tests.log)"
for lengths in 2341,2341,2341,2341,2341,2341,2341 3970,2089,3616,2234,677,1572,2226; do
  for pair in before=_vo after=.; do
    (cd "${pair#*=}" && PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_${pair%%=*} timeout 60 python3 \
      "$OLDPWD/tools/varlen_ab.py" --tag "${pair%%=*}" --head-dim 128,256 --repeats 3 --reps 10 --mode bwd \
      --lengths $lengths | sed "s/^{/{\"lengths\": \"${lengths:0:9}\", /") >> $OUT/ab.jsonl 2>> $OUT/ab.err
  done
done
python3 tools/ab_summary.py $OUT/ab.jsonl before after | tee $OUT/ab_summary.txt
