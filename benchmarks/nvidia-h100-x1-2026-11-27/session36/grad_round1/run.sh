#!/usr/bin/env bash
# Session 36: host time of the autograd path after planned calls without return_lse take a node with out as
# its only output (lse saved as an intermediate) and the Call tuple is kept on the plan. tools/host_profile.py's
# interleaved table (flash_attn_func, the SDPA entry, cuDNN) in alternating processes: _vh (HEAD before
# the change) and this tree, 3 rounds each. Then the release fast-path and training GPU tests.
set -u
OUT=${OUT:-/tmp/out}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
for r in 1 2 3; do
  for tree in _vh .; do
    PYTHONPATH=$PWD/$tree FA3LITE_CACHE_DIR=/tmp/fa3c_$tree timeout 90 python3 tools/host_profile.py \
      --out "$OUT/host_${r}_${tree#_}.json" > /dev/null 2>> "$OUT/host_err.log"
    echo "== round $r tree $tree rc=$?"
  done
done
python3 - "$OUT" <<'PY'
import glob, json, statistics, sys
rows = {}
for f in sorted(glob.glob(sys.argv[1] + "/host_*.json")):
    tree = "before" if f.endswith("_vh.json") else "after"
    for name, us in json.load(open(f))["interleaved_us"].items():
        rows.setdefault(name, {}).setdefault(tree, []).append(us)
for name, t in rows.items():
    print(f"{name:40s} before {' '.join(f'{x:6.1f}' for x in t.get('before', []))} | after "
          f"{' '.join(f'{x:6.1f}' for x in t.get('after', []))}")
PY
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 150 python3 -m pytest -q -p no:cacheprovider -rf --tb=short \
  tests/test_fastpath_gpu.py tests/test_training_gpu.py > "$OUT/tests.log" 2>&1
echo "== tests rc=$? $(tail -n 1 "$OUT/tests.log")"
