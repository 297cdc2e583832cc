#!/usr/bin/env bash
# Session 47: the debug-build trap in test_window_skips_key_blocks (fwd_mask_bits.diff applied).
# Same test, debug build, old tree (_vo) and new tree (.), printf of the timed-out wait kept (-s);
# then the rest of the debug feature/KV-cache tests past it on the new tree.
set -u
cp -r tests _vo/
export PYTHONUNBUFFERED=1
for tree in _vo .; do
  name=$([ "$tree" = . ] && echo after || echo before)
  (cd $tree && PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_$name CUDA_LAUNCH_BLOCKING=1 timeout 90 \
    python3 -m pytest -q -s -x -p no:cacheprovider tests/test_features_gpu.py -k window_skips) > $OUT/trap_$name.log 2>&1
  echo "$name rc=$? $(tail -n 1 $OUT/trap_$name.log)"; grep -m3 "timed out" $OUT/trap_$name.log
done
PYTHONPATH=$PWD FA3LITE_DEBUG=1 FA3LITE_CACHE_DIR=/tmp/fa3c_after timeout 200 python3 -m pytest -q -p no:cacheprovider \
  tests/test_features_gpu.py tests/test_kvcache_gpu.py --deselect tests/test_features_gpu.py::test_window_skips_key_blocks \
  > $OUT/debug_rest.log 2>&1
echo "debug rest rc=$? $(tail -n 1 $OUT/debug_rest.log)"
