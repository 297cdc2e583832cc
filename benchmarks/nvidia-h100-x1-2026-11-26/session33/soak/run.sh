#!/usr/bin/env bash
# Session 33, soak round (device call 2 after peers_a): does a batch's place in the bench's order
# (after an idle compile, after a power-hungry peer) move the ratios? The clock's transient after an
# idle second (tools/clock_probe.py), then the same bench grid alternately without and with a soak
# of 200 ms before each timed batch (--soak-ms), FA4 staged.
set -u
OUT=${OUT:-/tmp/out}
source .peers/b/install.sh > "$OUT/install.log" 2>&1 || { echo "FA4 install failed"; tail "$OUT/install.log"; }
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee "$OUT/device.txt"
timeout 120 python3 tools/clock_probe.py --impl fa3lite,cudnn,fa4 --seconds 1.6 --rounds 1 \
  --cases "fwd 64 16384 0;fwd 128 16384 0;bwd 64 16384 0" > "$OUT/transient.log" 2>&1; echo "== transient rc=$?"
grep -v Warn "$OUT/transient.log" | grep -v exe_args
ARGS="--mode fwd,bwd --head-dim 64,128 --causal both --seqlen 1k,16k --impl fa3lite,cudnn,fa4 --no-host-time --no-compile-time --no-plots --no-features --no-odd-check"
for run in 1 2; do
  for soak in 0 200; do
    timeout 200 python3 -m fa3lite.bench $ARGS --soak-ms $soak --out "$OUT/soak${soak}_$run" > "$OUT/soak${soak}_$run.log" 2>&1
    echo "== bench soak=$soak run=$run rc=$? $(tail -n 1 "$OUT/soak${soak}_$run.log")"
  done
done
python3 - "$OUT" <<'PY'
import json, sys, glob, collections
out = sys.argv[1]
rows = collections.defaultdict(dict)
for f in sorted(glob.glob(f"{out}/soak*_*/results.json")):
    tag = f.split("/")[-2]
    for m in json.load(open(f))["results"]:
        if m.get("status") == "ok":
            rows[(m["mode"], m["head_dim"], m["mask"], m["seqlen"])][(tag, m["impl"])] = m["tflops"]
tags = sorted({t for r in rows.values() for t, _ in r})
print("ratio fa3lite / best(cudnn, fa4), TFLOP/s fa3lite|cudnn|fa4 per run")
for key in sorted(rows):
    r = rows[key]
    cells = []
    for t in tags:
        ours, peers = r.get((t, "fa3lite")), [r.get((t, p)) for p in ("cudnn", "fa4")]
        peers = [x for x in peers if x]
        if ours and peers:
            cells.append(f"{t}: {ours / max(peers):.3f} ({ours:.0f}|{r.get((t, 'cudnn'), 0):.0f}|{r.get((t, 'fa4'), 0):.0f})")
    print(key, " ".join(cells))
PY
