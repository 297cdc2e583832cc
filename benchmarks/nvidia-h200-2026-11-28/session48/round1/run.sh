#!/usr/bin/env bash
# Session 48, call 1: the forward's V one block behind K for overlapped variants (fwd_producer.cuh)
# and the no-lse launch of inference repeats (_FwdPlan.out, the epilogue's null-LSE guard).
# Before the call on the CPU: `rm -rf _vo && mkdir _vo && git archive 2aedc21 cuda_src fa3lite tools |
# tar -x -C _vo`; carry ["_vo"].
#  1. Debug build (bounded waits, NaN-poisoned buffers): forward, fast-path, varlen, feature and
#     KV-cache GPU tests, with the driver's lightweight GPU core dump on an exception (session 47's
#     one illegal instruction: the dump names the kernel and the faulting PC).
#  2. compute-sanitizer racecheck and memcheck over tools/fwd_sanitize.py.
#  3. A/B before (_vo) / after (.), forward, d 64/128/256, 1k/4k/16k, both masks, 3 rounds.
#  4. Host time: tools/host_profile.py on _vo and on this tree, twice each, alternating.
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
export PYTHONUNBUFFERED=1
mkdir -p /tmp/cores
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 \
  CUDA_ENABLE_LIGHTWEIGHT_COREDUMP=1 CUDA_COREDUMP_FILE=/tmp/cores/core_%p timeout 230 python3 -m pytest -q -x \
  -p no:cacheprovider tests/test_fwd_gpu.py tests/test_fastpath_gpu.py tests/test_varlen_gpu.py \
  tests/test_features_gpu.py tests/test_kvcache_gpu.py > $OUT/debug_tests.log 2>&1
echo "debug tests rc=$?"; tail -2 $OUT/debug_tests.log
if ls /tmp/cores/core_* > /dev/null 2>&1; then
  ls -la /tmp/cores; tar -czf $OUT/cores.tgz -C /tmp cores
  which cuda-gdb && for c in /tmp/cores/core_*; do timeout 60 cuda-gdb -batch -ex "target cudacore $c" \
    -ex "info cuda kernels" -ex "x/4i \$pc" >> $OUT/cores.txt 2>&1; done
fi
for tool in racecheck memcheck; do
  PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_after PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 70 compute-sanitizer \
    --tool $tool --report-api-errors no python3 tools/fwd_sanitize.py > $OUT/san_$tool.log 2>&1
  echo "fwd_sanitize $tool rc=$? $(tail -n 1 $OUT/san_$tool.log)"
done
AB_TREES="before=_vo after=." timeout 190 bash tools/ab_round.sh 3 --head-dim 64,128,256 --seqlen 1k,4k,16k \
  --mode fwd --soak-ms 200 > $OUT/ab.log 2>&1; echo "ab rc=$?"; cat $OUT/ab_summary.txt
for r in 1 2; do
  for tree in _vo .; do
    tag=$([ "$tree" = . ] && echo after || echo before)
    (cd $tree && PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c_$tag timeout 60 python3 "$OLDPWD/tools/host_profile.py" \
      --out $OUT/host_${tag}_$r.json > $OUT/host_${tag}_$r.log 2>&1); echo "host $tag $r rc=$?"
  done
done
for f in $OUT/host_*.json; do python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].rsplit('/',1)[-1], {k: round(v, 1) for k, v in d['host_us'].items()}); print('  interleaved', {k: round(v, 1) for k, v in d['interleaved_us'].items()})" $f; done
cd $OUT && tar -czf round1.tgz ab.log ab.jsonl ab.err host_* && rm -f ab.log ab.jsonl ab.err host_*
