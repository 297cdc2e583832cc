#!/usr/bin/env bash
# Session 32, trace_bwd: per-CTA timelines of the backward (tools/trace_probe.py: SM idle before the
# first CTA, between CTAs and after the last; loop time per query block) where it trails cuDNN most
# (d=256 causal 1k/4k) and beside it d=256 full 4k, d=128 causal 4k.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
for cfg in "256 1 1k" "256 1 4k" "256 0 4k" "128 1 4k" "64 1 4k"; do
  set -- $cfg
  timeout 60 python3 tools/trace_probe.py --mode bwd --head-dim $1 --causal $2 --seqlen $3 >> $OUT/trace.jsonl 2>> $OUT/trace.err
done
python3 - $OUT/trace.jsonl <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(r["d"], r["causal"], r["S"], f'call {r["call_ms"]:.3f} ms span {r["span_us"]:.0f} us units {r["units"]}',
          f'idle mean {r["sm_idle_mean_us"]:.1f} before {r["sm_idle_before_first_us"]:.1f} after {r["sm_idle_after_last_us"]:.1f}',
          f'gap {r["gap_between_units_us"]["mean"]:.2f}', 'fit', r.get("loop_fit_us"), 'phases', {k: round(v, 2) for k, v in r["phase_mean_us"].items()})
PY
