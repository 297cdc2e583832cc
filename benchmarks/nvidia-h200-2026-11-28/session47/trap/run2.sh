#!/usr/bin/env bash
# Session 47, second call: reproduce the debug trap. (1) the failing run's command again, new tree,
# -s so a timed-out wait's printf is not captured; (2) loop.py, debug build, before and after trees.
set -u
export PYTHONUNBUFFERED=1
D=benchmarks/nvidia-h200-2026-11-28/session47/trap
cp -r tests _vo/; mkdir -p _vo/$D && cp $D/loop.py _vo/$D/
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_dbg timeout 200 python3 -m pytest -q -s -x -p no:cacheprovider \
  tests/test_fwd_gpu.py tests/test_varlen_gpu.py tests/test_features_gpu.py > $OUT/repeat.log 2>&1
echo "repeat rc=$? $(tail -n 1 $OUT/repeat.log)"; grep -m5 "timed out" $OUT/repeat.log
for tree in _vo . _vo .; do
  name=$([ "$tree" = . ] && echo after || echo before)
  (cd $tree && PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_$name timeout 100 python3 $D/loop.py 25) \
    >> $OUT/loop_$name.log 2>&1
  echo "loop $name rc=$? $(tail -n 1 $OUT/loop_$name.log)"; grep -m3 "timed out" $OUT/loop_$name.log
done
