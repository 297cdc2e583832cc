#!/bin/bash
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD:$PYTHONPATH
timeout 100 python3 _vr/probe_bench_append.py > $OUT/probe.log 2>&1
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_kvcache_gpu.py -k "malformed" > $OUT/tests.log 2>&1; echo "rc $?" >> $OUT/tests.log
