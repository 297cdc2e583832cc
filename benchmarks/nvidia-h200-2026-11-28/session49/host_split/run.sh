#!/usr/bin/env bash
# Prepared in session 48, not run: where the training step's host time goes now that cuDNN is timed
# on (B, H, S, D) views made once (section 48: our step 1.42-1.55x cuDNN's, forward with grad
# 1.36-1.47x). tools/host_split.py (its SDPA-style steps changed to that layout in session 48, not run
# since) with --split, three processes, then tools/host_profile.py once.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c
for r in 1 2 3; do
  timeout 150 python3 tools/host_split.py --split --rounds 9 --out $OUT/split_$r.json > $OUT/split_$r.log 2>&1
  echo "split $r rc=$?"
done
timeout 120 python3 tools/host_profile.py --out $OUT/profile.json > $OUT/profile.log 2>&1; echo "profile rc=$?"
for f in $OUT/split_*.json; do python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['host_us'])" $f; done
