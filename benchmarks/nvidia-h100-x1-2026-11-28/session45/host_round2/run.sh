#!/usr/bin/env bash
# Session 45 host_round2 (device call 1 of 3 back to back; carry .peers/p1, staged first):
# round1's process-to-process A/B of the shared gradient allocation moved by more than the change
# (cuDNN's step 269-335 us between processes). Here both run in one process, alternating sample by
# sample: tools/host_split.py --separate (the fa3lite step again with shared=False), 3 processes.
set -u
bash tools/speed_round.sh peers_part
export FA3LITE_CACHE_DIR=/tmp/fa3c PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
for i in 1 2 3; do
  timeout 150 python3 tools/host_split.py --separate --rounds 15 --out $OUT/host_$i.json > $OUT/host_$i.log 2>&1
  echo "host $i rc=$?"; grep -E '"(fa3lite|fa3lite separate|cudnn|separate / shared)' $OUT/host_$i.json
done
