#!/usr/bin/env bash
# One device round for the hardening work (issue 11), logs in $OUT (at most 8 files come back):
#   gpu_tests.log   python -m pytest -m gpu tests (the whole GPU suite, debug build: bounded waits trap)
#   stressN.log     the 10,000-call hypothesis stress run (FA3LITE_STRESS=1), in STRESS_PROCS processes
#   <tool>.log      compute-sanitizer memcheck / racecheck / synccheck / initcheck over the grid's kernel
#                   variants and odd shapes (tools/sanitize_grid.py; SANITIZE_TOOLS picks tools)
# Usage on the device: bash tools/hardening_round.sh [steps...]   steps: tests stress sanitize (default all)
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
steps=${*:-tests stress sanitize}
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$OUT/device.txt"
python3 -c "import torch, cuda.core, cuda.bindings; print(torch.__version__, cuda.core.__version__, cuda.bindings.__version__, torch.cuda.device_count())" | tee -a "$OUT/device.txt"

run() {  # run NAME LIMIT_S CMD...: one step, its log in $OUT/NAME.log, one summary line here
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout --kill-after=10 "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "== $name rc=$rc $((SECONDS - t0))s: $(grep -E 'passed|failed|ERROR SUMMARY|error' "$OUT/$name.log" | tail -n 1)"
}

for step in $steps; do
  case $step in
    tests)
      FA3LITE_DEBUG=1 run gpu_tests 420 python3 -m pytest -q -p no:cacheprovider -m gpu --maxfail=15 -rf --tb=short --durations=15 tests ;;
    stress)
      # 10,000 calls as STRESS_PROCS processes side by side (the run is host-bound; they also share the
      # GPU and the disk cache), each with its own hypothesis seed and its own memory accounting.
      procs=${STRESS_PROCS:-4}
      for i in $(seq 1 "$procs"); do
        FA3LITE_STRESS=1 FA3LITE_STRESS_CALLS=$(( (10000 + procs - 1) / procs )) run "stress$i" 540 \
          python3 -m pytest -q -p no:cacheprovider -s -rf --tb=short --hypothesis-seed="$i" \
          tests/test_stress_gpu.py &
      done
      wait ;;
    sanitize)
      for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}; do
        PYTORCH_NO_CUDA_MEMORY_CACHING=1 run "$tool" "${SANITIZE_LIMIT:-280}" compute-sanitizer --tool "$tool" --print-limit 20 \
          --report-api-errors no --error-exitcode 9 python3 tools/sanitize_grid.py ${SANITIZE_ARGS:-} \
          $([ "$tool" = initcheck ] && echo --initcheck)
      done ;;
  esac
done
