#!/usr/bin/env bash
# Session 38 gqa_round6: grouped GQA at every head dim but D = 64 with softcap (the dQ writer and
# turn keeper now walk (batch, head) pairs in one int: no spills at D = 64 and 256 either). Debug +
# release grouped tests (dense and varlen), racecheck / synccheck on forced grouped calls at
# D = 64/128/256, then tools/gqa_probe.py A/B at D = 64 and 256 against HEAD (_vo: grouped at D = 128
# only), 2 rounds alternating.
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
python3 -m pip install -q -e ".[test,bench]" > /dev/null 2>&1
export PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/logs/device.txt
T="python3 -m pytest -q -p no:cacheprovider -m gpu -rf --tb=short -x"
FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3d timeout 170 $T tests/test_bwd_gpu.py tests/test_varlen_gpu.py -k "grouped" > $OUT/logs/debug.log 2>&1; echo "grouped debug rc=$? $(tail -n1 $OUT/logs/debug.log)"
timeout 170 $T tests/test_bwd_gpu.py -k "grouped or head_layouts or partial or deterministic" tests/test_varlen_gpu.py > $OUT/logs/release.log 2>&1; echo "release rc=$? $(tail -n1 $OUT/logs/release.log)"
cat > /tmp/grouped_calls.py <<'PY'
import torch
from fa3lite.hopper import bwd
bwd.GROUPED_MIN_CTAS_PER_SM = 0
torch.manual_seed(0)
for d in (64, 128, 256):
    for causal in (False, True):
        for det in (False, True):
            q = torch.randn(1, 200, 8, d, device="cuda", dtype=torch.bfloat16)
            k, v = (torch.randn(1, 260, 2, d, device="cuda", dtype=torch.bfloat16) for _ in range(2))
            out = torch.randn(1, 200, 8, d, device="cuda", dtype=torch.bfloat16)
            lse = torch.randn(1, 8, 200, device="cuda") + 5
            g = bwd.backward(torch.randn_like(out), q, k, v, out, lse, d ** -0.5, causal, 60, det)
            torch.cuda.synchronize()
print("grouped calls done")
PY
for tool in racecheck synccheck; do
  PYTHONPATH=$PWD PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 120 compute-sanitizer --tool $tool --print-limit 5 python3 /tmp/grouped_calls.py > $OUT/logs/san_$tool.log 2>&1
  echo "$tool rc=$? $(grep -a -E 'ERROR SUMMARY|RACECHECK SUMMARY|grouped calls' $OUT/logs/san_$tool.log | tr '\n' ' ')"
done
for r in 1 2; do
  for pair in before=_vo after=.; do
    (cd "${pair#*=}" && PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_${pair%%=*} timeout 100 python3 \
      "$OLDPWD/tools/gqa_probe.py" --tag "${pair%%=*}" --head-dim 64,256 --ratios 1,2,4) >> $OUT/logs/gqa.jsonl 2>> $OUT/logs/gqa.err
  done
done
python3 - $OUT/logs/gqa.jsonl <<'PY' | tee $OUT/logs/gqa_summary.txt
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
cells = {}
for r in rows:
    cells.setdefault((r["d"], r["S"], r["causal"], r["hk"]), {}).setdefault(r["tag"], []).extend(r["ms"])
for (d, s, c, hk), t in sorted(cells.items()):
    med = {k: statistics.median(v) for k, v in t.items()}
    ref = statistics.median(cells[(d, s, c, 2048 // d)]["after"])
    print(f"d={d:<4d} S={s:<5d} {'causal' if c else 'full  '} Hk={hk:<3d} before {med['before']:.3f} after {med['after']:.3f} ms"
          f" (x{med['before'] / med['after']:.3f} faster; after / Hk=Hq {med['after'] / ref:.3f})")
PY
tar -czf $OUT/logs.tgz -C $OUT logs && rm -rf $OUT/logs
