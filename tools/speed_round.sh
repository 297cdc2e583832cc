#!/usr/bin/env bash
# One device round for kernel speed (issues 8, 9), logs in $OUT:
#   gpu_tests.log       the GPU test suite (-m gpu)
#   san_<tool>_fwd.log  compute-sanitizer racecheck/synccheck/memcheck over tools/fwd_sanitize.py
#   san_<tool>_bwd.log  the same over tools/sanitize_grid.py --quick
#   bench_before/ bench_after/   python -m fa3lite.bench (BENCH_ARGS) against _before/ (a git-ignored
#                       copy of an earlier commit's fa3lite/ and cuda_src/: carry it) and this tree
# Usage on the device: bash tools/speed_round.sh [steps...]   steps: tests sanitize ab bench (default tests sanitize ab)
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
steps=${*:-tests sanitize ab}
BENCH_ARGS=${BENCH_ARGS:---mode bwd --head-dim 64,128,256 --causal both --seqlen 1k,4k,16k --impl fa3lite,cudnn}
QUIET="--no-host-time --no-compile-time --no-odd-check --no-plots"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
for step in $steps; do
  case $step in
    tests)
      PYTHONPATH=$PWD timeout "${TEST_LIMIT:-300}" python3 -m pytest -q -p no:cacheprovider -rf --tb=short -m gpu tests \
        > "$OUT/gpu_tests.log" 2>&1; echo "== tests rc=$? $(tail -n 1 "$OUT/gpu_tests.log")" ;;
    sanitize)
      for tool in ${SANITIZE_TOOLS:-racecheck synccheck memcheck}; do
        PYTHONPATH=$PWD PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --tool "$tool" \
          --report-api-errors no --print-limit 10 python3 tools/fwd_sanitize.py > "$OUT/san_${tool}_fwd.log" 2>&1
        echo "== $tool fwd rc=$? $(tail -n 1 "$OUT/san_${tool}_fwd.log")"
        PYTHONPATH=$PWD PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool "$tool" \
          --report-api-errors no --print-limit 10 python3 tools/sanitize_grid.py --quick > "$OUT/san_${tool}_bwd.log" 2>&1
        echo "== $tool bwd rc=$? $(tail -n 1 "$OUT/san_${tool}_bwd.log")"
      done ;;
    ab)
      if [ -d _before/fa3lite ]; then
        PYTHONPATH=$PWD/_before timeout 240 python3 -m fa3lite.bench $BENCH_ARGS $QUIET --out "$OUT/bench_before" \
          > "$OUT/bench_before.log" 2>&1; echo "== bench before rc=$?"
      fi
      PYTHONPATH=$PWD timeout 240 python3 -m fa3lite.bench $BENCH_ARGS $QUIET --out "$OUT/bench_after" \
        > "$OUT/bench_after.log" 2>&1; echo "== bench after rc=$?" ;;
    bench)
      PYTHONPATH=$PWD timeout "${BENCH_LIMIT:-500}" python3 -m fa3lite.bench $BENCH_ARGS --out "$OUT/bench" \
        > "$OUT/bench.log" 2>&1; echo "== bench rc=$?" ;;
  esac
done
