#!/usr/bin/env bash
# One device round for host time (issue 10), logs and JSON in $OUT:
#   profile_before.json  tools/host_profile.py against the fa3lite in _before/ (if present, git-ignored: carry it; a copy of an
#                        earlier commit's fa3lite/, e.g. `git archive <commit> fa3lite | tar -x -C _before`)
#   profile_after.json   the same against this tree's fa3lite
#   gpu_tests.log        the whole GPU test suite
#   bench/               python -m fa3lite.bench (BENCH_ARGS, default one small cell), for its host-time
#                        table (all peers)
# Usage on the device: bash tools/host_round.sh [steps...]   steps: profile tests bench (default all)
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
steps=${*:-profile tests bench}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
for step in $steps; do
  case $step in
    profile)
      if [ -d _before/fa3lite ]; then
        PYTHONPATH=$PWD/_before timeout 200 python3 tools/host_profile.py --out "$OUT/profile_before.json" \
          > "$OUT/profile_before.log" 2>&1; echo "== profile before rc=$?"
      fi
      PYTHONPATH=$PWD timeout 200 python3 tools/host_profile.py --out "$OUT/profile_after.json" \
        > "$OUT/profile_after.log" 2>&1; echo "== profile after rc=$?" ;;
    tests)
      PYTHONPATH=$PWD timeout 300 python3 -m pytest -q -p no:cacheprovider -rf --tb=short -m gpu tests \
        > "$OUT/gpu_tests.log" 2>&1; echo "== tests rc=$? $(tail -n 1 "$OUT/gpu_tests.log")" ;;
    bench)
      PYTHONPATH=$PWD timeout "${BENCH_LIMIT:-400}" python3 -m fa3lite.bench ${BENCH_ARGS:---quick --head-dim 128 \
        --seqlen 1k --mode fwd --no-compile-time} --no-plots --out "$OUT/bench" > "$OUT/bench.log" 2>&1
      echo "== bench rc=$?"; grep -A14 "Host time per call" "$OUT/bench.log" ;;
  esac
done
