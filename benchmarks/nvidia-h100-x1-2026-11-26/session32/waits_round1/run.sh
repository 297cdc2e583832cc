#!/usr/bin/env bash
# Session 32, waits_round1: (1) release GPU tests of the plan helpers (hopper.bwd.for_query_length in
# both backward plans; kvcache._Layout keeping its GroupedRows); (2) counted waits in traced backward
# builds (trace.cuh wait): per site the share of waits that found the mbarrier phase still open.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_kvcache_gpu.py tests/test_bwd_gpu.py \
  tests/test_varlen_gpu.py > $OUT/tests_release.log 2>&1
echo "tests rc $?" >> $OUT/tests_release.log
tail -3 $OUT/tests_release.log
for cfg in "64 0 4k" "64 1 4k" "64 0 16k" "128 0 4k" "128 1 4k"; do
  set -- $cfg
  timeout 60 python3 tools/trace_probe.py --mode bwd --head-dim $1 --causal $2 --seqlen $3 >> $OUT/waits.jsonl 2>> $OUT/waits.err
done
python3 - $OUT/waits.jsonl <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    w = r["waits"]
    print(r["d"], r["causal"], r["S"], f'call {r["call_ms"]:.3f} ms',
          " | ".join(f'{k} open {v["open_share"]:.3f} x {v["cycles_per_open_wait"]:.0f} cyc' for k, v in w.items()))
PY
