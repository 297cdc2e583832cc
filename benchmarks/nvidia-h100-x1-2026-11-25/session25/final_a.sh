#!/usr/bin/env bash
# Session 25 final, call 1 of 2: FA4 wheel part a; GPU tests of the mask change that round 7 did not
# cover: debug build (bounded waits, NaN-poisoned outputs) features (windows, softcap, sinks, head
# dims 96/192) and the property tests.
set -u
mkdir -p /root/peers && cp .peers/a/* /root/peers/
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
git log -1 --format=%H > $OUT/commit.txt 2>/dev/null
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 420 python3 -m pytest -q tests/test_features_gpu.py tests/test_features_property_gpu.py tests/test_fwd_property_gpu.py > $OUT/dbg_tests.log 2>&1; echo "dbg rc=$?"; tail -n 2 $OUT/dbg_tests.log
