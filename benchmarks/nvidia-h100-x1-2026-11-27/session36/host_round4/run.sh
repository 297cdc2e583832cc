#!/usr/bin/env bash
# Session 36, call 6 (run inline): tools/host_profile.py with flash_attn_func's and the SDPA entry's
# no-grad forwards also timed interleaved (the sequential figures drifted 2x between calls).
export PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c && timeout 200 python3 tools/host_profile.py --out $OUT/host_profile.json > $OUT/host_profile.log 2>&1
