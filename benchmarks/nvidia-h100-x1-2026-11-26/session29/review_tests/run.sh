#!/usr/bin/env bash
# Session 29, review_tests: release-build kvcache / varlen / fast-path GPU tests after the review's
# edits to the varlen plan (an unused constructor argument dropped, lines reflowed).
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_kvcache_gpu.py tests/test_varlen_gpu.py \
  tests/test_fastpath_gpu.py > $OUT/tests_release.log 2>&1
echo "tests rc $?" >> $OUT/tests_release.log
tail -3 $OUT/tests_release.log
