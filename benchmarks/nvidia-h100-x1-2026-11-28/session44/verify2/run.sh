#!/usr/bin/env bash
# Session 44 verify2 (FA4 staging call 2 of 3, carry .peers/p2): racecheck over
# tools/varlen_sanitize.py --quick with room to finish (verify's 90 s ran out).
set -u
export PYTHONPATH=$PWD
bash tools/speed_round.sh peers_part > $OUT/peers.log 2>&1
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 400 compute-sanitizer --tool racecheck --report-api-errors no \
  python3 tools/varlen_sanitize.py --quick > $OUT/san_racecheck.log 2>&1; echo "rc=$?" >> $OUT/san_racecheck.log
tail -n 4 $OUT/san_racecheck.log $OUT/peers.log
