#!/usr/bin/env bash
# Session 32, waits_fwd: the forward's counted waits (trace.cuh wait at the overlapped mainloop's K and
# V waits and the producer's free-stage waits), as waits_round1 did for the backward: whether the
# consumers' K/V waits (2.8-3.9% of stall samples in ncu_fwd) find data not yet landed. First call
# (waits_round_a.jsonl): every warp counted into one slot per CTA and site; the traced kernels ran
# 1.3-1.7x slower than release. Second call (this script): a slot per warp; the backward again beside.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
for cfg in "fwd 64 0 16k" "fwd 128 0 16k" "fwd 64 1 1k" "fwd 64 1 16k" "fwd 128 1 4k" "bwd 64 0 4k" "bwd 128 1 4k"; do
  set -- $cfg
  timeout 60 python3 tools/trace_probe.py --mode $1 --head-dim $2 --causal $3 --seqlen $4 >> $OUT/waits.jsonl 2>> $OUT/waits.err
done
python3 - $OUT/waits.jsonl <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(r["mode"], r["d"], r["causal"], r["S"], f'call {r["call_ms"]:.3f} ms',
          " | ".join(f'{k} open {v["open_share"]:.3f} x {v["cycles_per_open_wait"]:.0f} cyc' for k, v in r["waits"].items()))
PY
