#!/usr/bin/env bash
# Session 35, call 8: the persistent varlen forward with two Q buffers (config.cuh kQStages; the next
# tile's Q loads while this one ends, as in the fixed-length kernel) and kQStages + 1 map sets per CTA
# (scheduler.cuh kMapSets). A/B of the bench's varlen batch vs _vq (a24bbfd, one Q buffer), 4 rounds
# alternating; debug build (NaN-poisoned buffers, bounded waits) over the varlen and kv-cache GPU
# tests; release varlen, kv-cache, feature and feature-property tests; racecheck and memcheck over a
# varlen forward with more tiles than SMs.
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
for r in 1 2 3 4; do
  for pair in before=_vq after=.; do
    (cd "${pair#*=}" && PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_${pair%%=*} timeout 120 python3 \
      "$OLDPWD/tools/varlen_ab.py" --tag "${pair%%=*}" --head-dim 64,128,256 --repeats 3) >> "$OUT/ab.jsonl" 2>> "$OUT/ab.err"
  done
done
python3 - "$OUT/ab.jsonl" <<'PY' | tee "$OUT/ab_summary.txt"
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
cells = {}
for r in rows:
    cells.setdefault((r["kind"], r["d"], r["causal"]), {}).setdefault(r["tag"], []).extend(r["tflops"])
for (kind, d, causal), t in sorted(cells.items()):
    b, a = statistics.median(t.get("before", [0])), statistics.median(t.get("after", [0]))
    print(f"{kind:7s} d={d:<4d} {'causal' if causal else 'full  '} before {b:6.1f} after {a:6.1f} ({a / b if b else 0:.3f})")
PY
FA3LITE_DEBUG=1 timeout 150 python3 -m pytest -q -p no:cacheprovider -rf --tb=short tests/test_varlen_gpu.py \
  tests/test_kvcache_gpu.py > "$OUT/debug_tests.log" 2>&1
echo "== debug rc=$? $(tail -n 1 "$OUT/debug_tests.log")"
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -rf --tb=short tests/test_varlen_gpu.py \
  tests/test_kvcache_gpu.py tests/test_features_gpu.py tests/test_features_property_gpu.py > "$OUT/tests.log" 2>&1
echo "== tests rc=$? $(tail -n 1 "$OUT/tests.log")"
cat > /tmp/varlen_race.py <<'PY'
import torch
from fa3lite import flash_attn_varlen_func
lengths = (1100, 37, 700, 1, 515)
cu = torch.tensor((0,) + lengths, dtype=torch.int64).cumsum(0).to("cuda", torch.int32)
for d in (64, 128):
    for causal in (False, True):
        q, k, v = (torch.randn(sum(lengths), 8, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        out = flash_attn_varlen_func(q, k, v, cu, cu, max(lengths), max(lengths), causal=causal, backend="fa3lite")
        print(f"d={d} causal={causal}: {'ok' if bool(torch.isfinite(out).all()) else 'NOT FINITE'}", flush=True)
PY
for tool in racecheck memcheck; do
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 60 compute-sanitizer --tool "$tool" \
    --report-api-errors no python3 /tmp/varlen_race.py >> "$OUT/race.log" 2>&1
  echo "== varlen $tool rc=$? $(tail -n 1 "$OUT/race.log")"
done
