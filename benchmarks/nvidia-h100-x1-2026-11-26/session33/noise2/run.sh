#!/usr/bin/env bash
# Session 33, noise round 2 (rounds now rotate the implementations): identical forward kernels under
# the fa3lite and fa3lite_det columns, soaked twice (the default) and without a soak; then FA4's first
# wheel part to /root/peers for the final call.
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
ARGS="--mode fwd --head-dim 64,128,256 --causal both --seqlen 1k,4k,16k --deterministic --impl fa3lite,cudnn --no-host-time --no-compile-time --no-plots --no-features --no-odd-check"
for setting in "soak_1:" "nosoak:--soak-ms 0" "soak_2:"; do
  tag=${setting%%:*}; opt=${setting#*:}
  timeout 140 python3 -m fa3lite.bench $ARGS $opt --out "$OUT/$tag" > "$OUT/$tag.log" 2>&1
  echo "== $tag rc=$?"
  python3 - "$OUT/$tag/results.json" <<'PY'
import json, sys, collections, statistics
r = collections.defaultdict(dict)
for m in json.load(open(sys.argv[1]))["results"]:
    if m["status"] == "ok":
        r[(m["head_dim"], m["mask"], m["seqlen"])][m["impl"]] = m["tflops"]
q = {k: v["fa3lite_det"] / v["fa3lite"] for k, v in r.items() if "fa3lite_det" in v}
d = [abs(1 - x) for x in q.values()]
print("  identical forward kernels |1 - det/default|: median %.3f max %.3f (n %d); det/default mean %.3f" %
      (statistics.median(d), max(d), len(d), statistics.mean(q.values())))
print("  fa3lite/cudnn:", " ".join("%d%s%d:%.2f" % (k[0], k[1][0], k[2] // 1024, v["fa3lite"] / v["cudnn"]) for k, v in sorted(r.items())))
PY
done
mkdir -p /root/peers && cp .peers/a/* /root/peers/ && echo "peers part a staged"
