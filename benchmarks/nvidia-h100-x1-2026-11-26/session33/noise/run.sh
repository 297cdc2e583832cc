#!/usr/bin/env bash
# Session 33, noise round: how far apart does the bench time two identical kernels (fa3lite's forward
# under the fa3lite and fa3lite_det columns)? The forward grid with cuDNN, in four settings one after
# another: soaked batches of >= 100 ms (twice), soaked batches of 10 calls, no soak.
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
ARGS="--mode fwd --head-dim 64,128,256 --causal both --seqlen 1k,4k,16k --deterministic --impl fa3lite,cudnn --no-host-time --no-compile-time --no-plots --no-features --no-odd-check"
for setting in "b100_1:--batch-ms 100" "b0:--batch-ms 0" "b100_2:--batch-ms 100" "nosoak:--soak-ms 0"; do
  tag=${setting%%:*}; opt=${setting#*:}
  timeout 140 python3 -m fa3lite.bench $ARGS $opt --out "$OUT/$tag" > "$OUT/$tag.log" 2>&1
  echo "== $tag rc=$?"
  python3 - "$OUT/$tag/results.json" <<'PY'
import json, sys, collections, statistics
r = collections.defaultdict(dict)
for m in json.load(open(sys.argv[1]))["results"]:
    if m["status"] == "ok":
        r[(m["head_dim"], m["mask"], m["seqlen"])][m["impl"]] = (m["tflops"], m["reps"])
d = [abs(1 - v["fa3lite_det"][0] / v["fa3lite"][0]) for v in r.values() if "fa3lite_det" in v]
print("  identical forward kernels |1 - det/default|: median %.3f max %.3f (n %d); reps %s" %
      (statistics.median(d), max(d), len(d), sorted({v["fa3lite"][1] for v in r.values()})))
print("  fa3lite/cudnn:", " ".join("%d%s%d:%.2f" % (k[0], k[1][0], k[2] // 1024, v["fa3lite"][0] / v["cudnn"][0]) for k, v in sorted(r.items())))
PY
done
