#!/usr/bin/env bash
# One device round for the inference and integration work (issues 13, 14), logs in $OUT:
#   kvcache_gpu.log   tests/test_kvcache_gpu.py (kernel path, pack-GQA, CUDA graphs, torch.compile)
#   hf_gpu.log        tests/test_hf_transformers.py -m gpu (needs transformers: see below)
#   decode/           python -m fa3lite.bench --decode (DECODE_ARGS; default the quick preset)
#   hf_bench.json     tools/hf_bench.py (tokens/s, fa3lite vs sdpa [vs flash_attention_2])
#   varlen_gpu.log    tests/test_varlen_gpu.py (the varlen kernels the KV-cache path runs)
#   memcheck.log      compute-sanitizer memcheck over the split-KV and malformed-length kvcache tests
#   sweep.log/.json   tools/decode_probe.py sweep (kernel time per num_splits, CUDA graph replays)
#   host.log          tools/decode_probe.py host (host time per call, cProfile)
# transformers is not on the device: download its wheels for the device's Python here (no numpy,
# typing_extensions, packaging, filelock, fsspec: the device has them), e.g.
#   python3 -m pip download --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d .hf "transformers==5.23.0"
# keep .hf out of git (.git/info/exclude) and carry it; this script installs it into /tmp/hf.
# Usage on the device: bash tools/inference_round.sh [steps...]
#   steps: kvcache varlen memcheck sweep host decode hf hfbench (default: kvcache hf decode hfbench)
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=${FA3LITE_CACHE_DIR:-/tmp/fa3c}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
steps=${*:-kvcache hf decode hfbench}
DECODE_ARGS=${DECODE_ARGS:---decode-quick}
if [ -d .hf ] && [ ! -d /tmp/hf ]; then
  python3 -m pip install -q --no-deps --target /tmp/hf .hf/*.whl > "$OUT/hf_install.log" 2>&1
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}:/tmp/hf
for step in $steps; do
  case $step in
    kvcache)
      timeout 200 python3 -m pytest -q -p no:cacheprovider -rf --tb=short -m gpu tests/test_kvcache_gpu.py \
        > "$OUT/kvcache_gpu.log" 2>&1; echo "== kvcache rc=$? $(tail -n 1 "$OUT/kvcache_gpu.log")" ;;
    varlen)
      timeout 240 python3 -m pytest -q -p no:cacheprovider -rf --tb=short -m gpu tests/test_varlen_gpu.py \
        > "$OUT/varlen_gpu.log" 2>&1; echo "== varlen rc=$? $(tail -n 1 "$OUT/varlen_gpu.log")" ;;
    memcheck)
      PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 240 compute-sanitizer --tool memcheck --report-api-errors no \
        python3 -m pytest -q -p no:cacheprovider -rf --tb=short -m gpu tests/test_kvcache_gpu.py \
        -k "malformed or (explicit_num_splits and 17) or sink_softcap_head_dims" > "$OUT/memcheck.log" 2>&1
      echo "== memcheck rc=$? $(grep -E 'ERROR SUMMARY|passed|failed' "$OUT/memcheck.log" | tail -n 2 | tr '\n' ' ')" ;;
    sweep)
      timeout 240 python3 tools/decode_probe.py sweep --out "$OUT/sweep.json" > "$OUT/sweep.log" 2>&1
      echo "== sweep rc=$?" ;;
    host)
      timeout 120 python3 tools/decode_probe.py host > "$OUT/host.log" 2>&1; echo "== host rc=$?" ;;
    hf)
      timeout 300 python3 -m pytest -q -p no:cacheprovider -rf --tb=short -m gpu tests/test_hf_transformers.py \
        > "$OUT/hf_gpu.log" 2>&1; echo "== hf rc=$? $(tail -n 1 "$OUT/hf_gpu.log")" ;;
    decode)
      timeout "${DECODE_LIMIT:-400}" python3 -m fa3lite.bench $DECODE_ARGS --out "$OUT/decode" \
        > "$OUT/decode.log" 2>&1; echo "== decode rc=$? $(tail -n 1 "$OUT/decode.log")" ;;
    hfbench)
      timeout "${HFBENCH_LIMIT:-300}" python3 tools/hf_bench.py --out "$OUT/hf_bench.json" \
        > "$OUT/hf_bench.log" 2>&1; echo "== hf_bench rc=$? $(tail -n 4 "$OUT/hf_bench.log")" ;;
  esac
done
