#!/usr/bin/env bash
# Runs the sequence-length benchmark on the GPU machine and leaves its files in $OUT:
#   log.txt (everything printed), table.txt, results.csv, results.json, plot_fwd.png, plot_bwd.png,
#   plot_fwdbwd.png (7 files, one folder level).
# Usage, from the repository root on the device:
#   FA3LITE_COMMIT=<commit> bash benchmarks/run_device.sh [--quick | --full] [more fa3lite.bench flags]
# FA3LITE_BENCH_LIMIT_S (default 540) is the hard wall-clock limit; the benchmark stops starting new
# work 90 s before it, so the table and files are still written inside a 10-minute device command.
# FlashAttention-4 is timed when its wheels were unpacked into /tmp/site (docs/hopper-facts.md, sec. 2).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/bench_out}"
LIMIT_S="${FA3LITE_BENCH_LIMIT_S:-540}"
MARGIN_S=90
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
if [ -d /tmp/site/flash_attn/cute ]; then
  export PYTHONPATH="$PYTHONPATH:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages"
fi
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,memory.used \
    --format=csv 2>&1 || true
  timeout --signal=INT --kill-after=30 "$LIMIT_S" \
    python3 -m fa3lite.bench --out "$OUT" --time-budget $((LIMIT_S - MARGIN_S)) "$@"
  echo "fa3lite.bench exit status $?"
} 2>&1 | tee "$OUT/log.txt"
rc=$(grep -o 'fa3lite.bench exit status [0-9]*' "$OUT/log.txt" | tail -1 | grep -o '[0-9]*$')
exit "${rc:-1}"
