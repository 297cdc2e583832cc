#!/bin/bash
# Round 10 (issue 13): the append kernel's tests (release, debug, memcheck) and the quick decode grid.
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export PYTHONPATH=$PWD:$PYTHONPATH
{
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_kvcache_gpu.py tests/test_fastpath_gpu.py 2>&1 | tail -3
echo "release rc ${PIPESTATUS[0]}"
FA3LITE_DEBUG=1 timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_kvcache_gpu.py 2>&1 | tail -3
echo "debug rc ${PIPESTATUS[0]}"
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 240 compute-sanitizer --tool memcheck --report-api-errors no \
  python3 -m pytest -q -p no:cacheprovider tests/test_kvcache_gpu.py -k "append or malformed or repeated" 2>&1 | tail -5
echo "memcheck rc ${PIPESTATUS[0]}"
} > $OUT/tests.log 2>&1
timeout 200 python3 -m fa3lite.bench --decode-quick --impl fa3lite,fa3lite_append,sdpa --time-budget 150 \
  --out $OUT/decode > $OUT/decode.log 2>&1
rm -f $OUT/decode/*.csv
timeout 60 python3 _vr/probe_append.py > $OUT/probe.log 2>&1
