#!/usr/bin/env bash
# Session 47 final run, call 2 of 3 (carry .peers/p2): FA4's second part staged; compute-sanitizer
# racecheck over tools/fwd_sanitize.py on this tree.
set -u
bash tools/speed_round.sh peers_part
FA3LITE_CACHE_DIR=/tmp/fa3c PYTORCH_NO_CUDA_MEMORY_CACHING=1 PYTHONPATH=$PWD timeout 80 compute-sanitizer \
  --tool racecheck --report-api-errors no python3 tools/fwd_sanitize.py > $OUT/san_racecheck.log 2>&1
echo "fwd_sanitize racecheck rc=$? $(tail -n 1 $OUT/san_racecheck.log)"
