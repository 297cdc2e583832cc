#!/usr/bin/env bash
# Session 39 round1: grouped GQA as a compile-time variant (BwdVariant.grouped_heads,
# kGroupedHeads): MHA kernels keep a head count of 1 at every D, GQA is grouped at D = 64 too (not with
# softcap). Debug + release tests (grouped ones at D = 64/96/128/256, the whole backward file, varlen,
# training), racecheck / synccheck on forced grouped D = 64 calls, then tools/gqa_probe.py A/B against
# 0745234 (_vo), 3 rounds alternating: D = 64 GQA and MHA, D = 128 / 256 MHA controls.
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
python3 -m pip install -q -e ".[test,bench]" > /dev/null 2>&1
export PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/logs/device.txt
T="python3 -m pytest -q -p no:cacheprovider -m gpu -rf --tb=short -x"
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3d timeout 200 $T tests/test_bwd_gpu.py tests/test_varlen_gpu.py -k "grouped" > $OUT/logs/debug.log 2>&1; echo "grouped debug rc=$? $(tail -n1 $OUT/logs/debug.log)"
timeout 300 $T tests/test_bwd_gpu.py tests/test_varlen_gpu.py tests/test_training_gpu.py tests/test_fastpath_gpu.py > $OUT/logs/release.log 2>&1; echo "release rc=$? $(tail -n1 $OUT/logs/release.log)"
cat > /tmp/grouped_calls.py <<'PY'
import torch
from fa3lite.hopper import bwd
bwd.GROUPED_MIN_CTAS_PER_SM = 0
torch.manual_seed(0)
for d in (64, 128):
    for causal in (False, True):
        for det in (False, True):
            q = torch.randn(1, 300, 8, d, device="cuda", dtype=torch.bfloat16)
            k, v = (torch.randn(1, 360, 2, d, device="cuda", dtype=torch.bfloat16) for _ in range(2))
            out = torch.randn(1, 300, 8, d, device="cuda", dtype=torch.bfloat16)
            lse = torch.randn(1, 8, 300, device="cuda") + 5
            g = bwd.backward(torch.randn_like(out), q, k, v, out, lse, d ** -0.5, causal, 60, det)
            torch.cuda.synchronize()
print("grouped calls done")
PY
for tool in racecheck synccheck; do
  PYTHONPATH=$PWD PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 120 compute-sanitizer --tool $tool --print-limit 5 python3 /tmp/grouped_calls.py > $OUT/logs/san_$tool.log 2>&1
  echo "$tool rc=$? $(grep -a -E 'ERROR SUMMARY|RACECHECK SUMMARY|grouped calls' $OUT/logs/san_$tool.log | tr '\n' ' ')"
done
for r in 1 2 3; do
  for pair in before=_vo after=.; do
    (cd "${pair#*=}" && PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_${pair%%=*} timeout 100 python3 \
      "$OLDPWD/tools/gqa_probe.py" --tag "${pair%%=*}" --head-dim 64 --ratios 1,2,4 --repeats 2) >> $OUT/logs/gqa.jsonl 2>> $OUT/logs/gqa.err
    (cd "${pair#*=}" && PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_${pair%%=*} timeout 100 python3 \
      "$OLDPWD/tools/gqa_probe.py" --tag "${pair%%=*}" --head-dim 128,256 --ratios 1 --repeats 2) >> $OUT/logs/gqa.jsonl 2>> $OUT/logs/gqa.err
  done
done
python3 tools/ab_summary.py $OUT/logs/gqa.jsonl before after | tee $OUT/logs/gqa_summary.txt
tar -czf $OUT/logs.tgz -C $OUT logs && rm -rf $OUT/logs
