#!/bin/bash
# Session 27 round 4 (issue 12): the varlen forward's producer claims its next tile two key blocks
# ahead (_vc), and on top of that the kernel writes the rows of no sequence itself, so out and lse
# need no fill (after), against HEAD 736cef6 (_vh): varlen_ab fwd in alternation (3 rounds);
# traces of fwd d=64 full varlen; debug-build varlen and kvcache tests; memcheck and racecheck.
cd "$(dirname "$0")/.."
repo=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export PYTHONUNBUFFERED=1
FA3LITE_DEBUG=1 PYTHONPATH=$repo timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_varlen_gpu.py \
  tests/test_kvcache_gpu.py > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
for r in 1 2 3; do
  for tree in head=_vh claim=_vc after=.; do
    tag=${tree%%=*}; root=$(cd "${tree#*=}" && pwd)
    (cd $root && FA3LITE_CACHE_DIR=/tmp/fa3c_$tag PYTHONPATH=$root timeout 200 python3 $repo/tools/varlen_ab.py --tag $tag \
      --head-dim 64,128,256) >> $OUT/ab.jsonl 2>> $OUT/ab.err
  done
done
for tree in head=_vh after=.; do
  tag=${tree%%=*}; root=$(cd "${tree#*=}" && pwd)
  for dc in "64 0" "128 1"; do
    set -- $dc
    (cd $root && PYTHONPATH=$root timeout 120 python3 $repo/tools/trace_probe.py --mode fwd --head-dim $1 --causal $2 \
      --seqlen 2341 --varlen | sed "s/^{/{\"tag\": \"$tag\", /") >> $OUT/trace.jsonl 2>> $OUT/trace.err
  done
done
export PYTHONPATH=$repo
for dc in "64 1" "256 1" "128 0"; do
  for tool in memcheck racecheck; do
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 compute-sanitizer --tool $tool --report-api-errors no python3 \
      _vr/san_varlen.py $dc > $OUT/san.tmp 2>&1; echo "== $tool $dc rc $?" >> $OUT/sanitize.log; tail -3 $OUT/san.tmp >> $OUT/sanitize.log
  done
done
