#!/usr/bin/env bash
# Session 29, paged_round1 (issue 13): the paged split kernel looks up a key block's pages with one
# lane per chunk (one page-table round trip per block, shared by K and V) instead of one dependent
# lookup and division per chunk in the leader. Debug-build paged kvcache tests, then
# tools/decode_probe.py paged (pages read in place vs gathered, graph replays) for this tree and
# 536b675's (_vp), twice each, alternating.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
FA3LITE_DEBUG=1 timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/test_kvcache_gpu.py -k "paged or oracle or append" \
  > $OUT/tests_debug.log 2>&1; echo "rc $?" >> $OUT/tests_debug.log
tail -2 $OUT/tests_debug.log
for i in 1 2; do
  for tree in after before; do
    if [ $tree = before ]; then P=$PWD/_vp:$PWD/tools; else P=$PWD:$PWD/tools; fi
    PYTHONPATH=$P timeout 120 python3 tools/decode_probe.py paged --out $OUT/paged_${tree}_$i.json > $OUT/paged_${tree}_$i.log 2>&1
  done
done
grep in_place $OUT/paged_*_1.log $OUT/paged_*_2.log | sort -t: -k2
