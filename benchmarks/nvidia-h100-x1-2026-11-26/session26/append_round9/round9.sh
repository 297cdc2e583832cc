#!/bin/bash
# Round 9 (issue 13): append kernel vs torch's append in one process; the append tests.
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD:$PYTHONPATH
timeout 120 python3 _vr/probe_append.py > $OUT/probe.log 2>&1
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_kvcache_gpu.py -k "append or repeated" > $OUT/tests.log 2>&1
echo "rc $?" >> $OUT/tests.log
