#!/usr/bin/env bash
# One device round for the training features (issue 12), logs in $OUT:
#   features.log        tests/test_features_gpu.py, test_features_property_gpu.py, test_varlen_gpu.py
#                       (windows, softcap, sinks, packed sequences through the kernels)
#   features_debug.log  the same with FA3LITE_DEBUG=1 (bounded mbarrier waits, NaN-poisoned buffers)
#   gpu_tests.log       the rest of the GPU suite (-m gpu)
#   san_<tool>.log      compute-sanitizer over a few feature cases
#   feature_bench.log, feature_bench.json   tools/feature_bench.py
# Usage on the device: bash tools/feature_round.sh [steps...]   steps: features debug suite sanitize bench
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
PYTEST="python3 -m pytest -q -p no:cacheprovider -rf --tb=short"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
for step in ${*:-features suite}; do
  case $step in
    features)
      timeout "${FEATURE_LIMIT:-300}" $PYTEST tests/test_features_gpu.py tests/test_features_property_gpu.py \
        tests/test_varlen_gpu.py > "$OUT/features.log" 2>&1
      echo "== features rc=$? $(tail -n 1 "$OUT/features.log")" ;;
    debug)
      FA3LITE_DEBUG=1 timeout 240 $PYTEST tests/test_features_gpu.py tests/test_varlen_gpu.py \
        -k "all_together or rows_without or sink or deterministic or lengths" > "$OUT/features_debug.log" 2>&1
      echo "== features debug rc=$? $(tail -n 1 "$OUT/features_debug.log")" ;;
    suite)
      timeout "${TEST_LIMIT:-300}" $PYTEST -m gpu tests --ignore tests/test_features_gpu.py \
        --ignore tests/test_features_property_gpu.py --ignore tests/test_varlen_gpu.py > "$OUT/gpu_tests.log" 2>&1
      echo "== suite rc=$? $(tail -n 1 "$OUT/gpu_tests.log")" ;;
    sanitize)
      for tool in ${SANITIZE_TOOLS:-racecheck synccheck memcheck}; do
        PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool "$tool" --report-api-errors no \
          --print-limit 10 $PYTEST tests/test_features_gpu.py tests/test_varlen_gpu.py -k "all_together or softcap_and_sink" \
          > "$OUT/san_$tool.log" 2>&1
        echo "== $tool rc=$? $(grep -E 'ERROR SUMMARY|passed|failed' "$OUT/san_$tool.log" | tail -n 2 | tr '\n' ' ')"
      done ;;
    bench)
      timeout "${BENCH_LIMIT:-300}" python3 tools/feature_bench.py --out "$OUT" > "$OUT/feature_bench.log" 2>&1
      echo "== bench rc=$?" ;;
  esac
done
