#!/usr/bin/env bash
# Session 39 round4: the whole GPU test suite again after round3's 66 failures (every one D = 256
# GQA whose grid kept the f32 form: head_walk replaced dkv_f32 on a variant that walked, which the
# variant refused), release build.
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}
python3 -m pip install -q -e ".[test,bench]" > /dev/null 2>&1
export PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
timeout 540 python3 -m pytest -q -p no:cacheprovider -rf --tb=short --maxfail=10 --durations=15 -m gpu tests > $OUT/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(tail -n1 $OUT/gpu_tests.log)"
grep -E "^FAILED|^ERROR" $OUT/gpu_tests.log | head -20
