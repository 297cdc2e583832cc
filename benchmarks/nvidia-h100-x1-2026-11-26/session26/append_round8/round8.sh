#!/bin/bash
# Round 8 (issue 13, 10): KV-cache append kernel and SDPA gradients in torch's layout. GPU tests (release,
# then debug for the new paths); decode host probe and the quick decode grid, before (_vb = HEAD) and after.
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export PYTHONPATH=$PWD:$PYTHONPATH
{
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_kvcache_gpu.py tests/test_fastpath_gpu.py \
  tests/test_training_gpu.py 2>&1 | tail -5
echo "release rc ${PIPESTATUS[0]}"
FA3LITE_DEBUG=1 timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_kvcache_gpu.py tests/test_fastpath_gpu.py 2>&1 | tail -3
echo "debug rc ${PIPESTATUS[0]}"
} > $OUT/tests.log 2>&1
{
for tree in after before; do
  if [ $tree = before ]; then export PYTHONPATH=$PWD/_vb:$PWD/tools; else export PYTHONPATH=$PWD:$PWD/tools; fi
  echo "===== decode_probe host ($tree)"
  timeout 120 python3 tools/decode_probe.py host 2>&1 | grep "^=="
done
} > $OUT/host.log 2>&1
for tree in after before; do
  if [ $tree = before ]; then P=$PWD/_vb; else P=$PWD; fi
  PYTHONPATH=$P timeout 200 python3 -m fa3lite.bench --decode-quick --impl fa3lite,fa3lite_append,sdpa \
    --time-budget 150 --out $OUT/decode_$tree > $OUT/decode_$tree.log 2>&1
  rm -f $OUT/decode_$tree/*.csv $OUT/decode_$tree/results.json
done
