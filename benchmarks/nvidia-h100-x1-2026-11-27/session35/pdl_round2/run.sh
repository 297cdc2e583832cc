#!/usr/bin/env bash
# Session 35, call 7: pdl_round1 again where it moved (d=128 1k/4k, d=64 and d=256 1k), 5 rounds,
# and the host time of one backward call at a launch-bound shape (B=1, S=128, H=16, d=128: the
# three launches with and without the dependent-launch attribute), trees alternating.
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
AB_TREES="before=_vp after=." OUT=$OUT bash tools/ab_round.sh 5 --mode bwd --head-dim 64,128,256 --seqlen 1k,4k
cat > /tmp/host_bwd.py <<'PY'
import sys, time, torch
from fa3lite.hopper import bwd
tag = sys.argv[1]
torch.manual_seed(0)
q, k, v, do = (torch.randn(1, 128, 16, 128, device="cuda", dtype=torch.bfloat16) for _ in range(4))
out, lse = torch.randn_like(q), torch.randn(1, 16, 128, device="cuda")
args = (do, q, k, v, out, lse, 0.088, False, 0, False)
for _ in range(50):
    bwd.backward(*args)
torch.cuda.synchronize()
best = []
for _ in range(7):
    t0 = time.perf_counter()
    for _ in range(500):
        bwd.backward(*args)
    best.append((time.perf_counter() - t0) / 500 * 1e6)
    torch.cuda.synchronize()
print(f"{tag} host us per backward call: median {sorted(best)[3]:.1f} min {min(best):.1f}")
PY
for r in 1 2 3; do
  for pair in before=_vp after=.; do
    (cd "${pair#*=}" && PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_${pair%%=*} timeout 60 python3 /tmp/host_bwd.py "${pair%%=*}") 2>&1 | tee -a "$OUT/host.txt"
  done
done
