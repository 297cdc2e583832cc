#!/usr/bin/env bash
# Session 37 round5 (issue 13): a planned decode step that does not return lse has the kernels write
# it into the workspace (one allocation less). Release and debug kvcache GPU tests; then the host time
# per decode step, before (_vh = the split-count commit, git archive) and after, alternating processes
# (tools/decode_probe.py host: B=1 1k without and with an appended row, B=8 8k), 5 rounds.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q -e ".[test,bench]" > $OUT/install.log 2>&1
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 200 python3 -m pytest -q -p no:cacheprovider -rf --tb=short \
  tests/test_kvcache_gpu.py tests/test_fastpath_gpu.py > "$OUT/tests.log" 2>&1
echo "== release kvcache rc=$? $(tail -n 1 "$OUT/tests.log")"
PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3d FA3LITE_DEBUG=1 timeout 200 python3 -m pytest -q -p no:cacheprovider -rf \
  --tb=short tests/test_kvcache_gpu.py > "$OUT/debug.log" 2>&1
echo "== debug kvcache rc=$? $(tail -n 1 "$OUT/debug.log")"
for r in 1 2 3 4 5; do
  for tree in _vh .; do
    echo "## round $r tree $tree" >> "$OUT/host.log"
    (PYTHONPATH=$PWD/$tree FA3LITE_CACHE_DIR=/tmp/fa3c_$tree timeout 60 python3 tools/decode_probe.py host 2>&1 \
      | grep "us host") >> "$OUT/host.log"
  done
done
cat "$OUT/host.log"
