#!/usr/bin/env bash
# Session 40 round3: does 2154741's dQ writer (one flat count over the tile's visits) cost the dense
# backward anything? round1's dense comparator read 0.98-1.01. tools/ab_round.sh against 82e6c20
# (_vo), 3 rounds alternating: D = 64 / 128, full and causal, 1k / 4k / 16k, default and
# deterministic backward; then tools/gqa_probe.py on both trees (GQA walking variants, whose writer
# walks several heads), 2 rounds.
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
AB_TREES="before=_vo after=." timeout 330 bash tools/ab_round.sh 3 --head-dim 64,128 --seqlen 1k,4k,16k --mode bwd,det
for round in 1 2; do
  for pair in before=_vo after=.; do
    (cd "${pair#*=}" && PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_${pair%%=*} timeout 80 python3 \
      "$OLDPWD/tools/gqa_probe.py" --tag "${pair%%=*}" --head-dim 64,128 --ratios 4 --repeats 2) >> $OUT/gqa.jsonl 2>> $OUT/gqa.err
  done
done
python3 tools/ab_summary.py $OUT/gqa.jsonl before after | tee $OUT/gqa_summary.txt
