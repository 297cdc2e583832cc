#!/usr/bin/env bash
# Session 29, host_round3 (issue 13): the varlen / split forward plan packs its parameters with one
# struct per launch (launch.Prepared, page_table moved into FwdParams' leading addresses), the combine
# likewise (a dependent Prepared launch). Debug-build kvcache / varlen / fast-path tests, then the
# decode host probe for this tree and 71ab936's (_vp), alternating, twice; the step's kernels once.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
FA3LITE_DEBUG=1 timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/test_kvcache_gpu.py tests/test_varlen_gpu.py \
  tests/test_fastpath_gpu.py > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
tail -2 $OUT/tests_debug.log
for i in 1 2; do
  for tree in after before; do
    if [ $tree = before ]; then P=$PWD/_vp:$PWD/tools; else P=$PWD:$PWD/tools; fi
    PYTHONPATH=$P timeout 100 python3 tools/decode_probe.py host > $OUT/host_${tree}_$i.log 2>&1
    echo "$tree $i: $(grep 'us host' $OUT/host_${tree}_$i.log | tr '\n' ' ')"
  done
done | tee $OUT/host_summary.txt
timeout 100 python3 tools/decode_probe.py timeline --out $OUT/timeline.json > /dev/null 2>&1; echo "timeline rc $?"
