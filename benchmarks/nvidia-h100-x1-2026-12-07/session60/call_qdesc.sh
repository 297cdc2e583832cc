#!/usr/bin/env bash
# Session 60: the forward with Q's descriptor made once a tile (q_desc.diff applied in the working
# tree, HEAD's code in _vo: `mkdir _vo && git archive HEAD cuda_src fa3lite | tar -x -C _vo`, carry
# ["_vo"]). Debug forward tests (bounded waits, NaN-poisoned outputs), A/B against HEAD at
# d = 64 / 128 / 256, 3 rounds, then ncu's L2 breakdown of our d = 128 full 16k forward (this tree's
# code: the descriptor does not touch memory traffic).
set -u
ROOT=$OUT
OUT=$ROOT/debug DEBUG_LIMIT=170 DEBUG_TESTS=tests/test_fwd_gpu.py DEBUG_K="" bash tools/speed_round.sh debug
export PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c
OUT=$ROOT AB_TREES="before=_vo qdesc=." timeout 300 bash tools/ab_round.sh 3 --mode fwd --head-dim 64,128,256 \
  --seqlen 1k,4k,16k --soak-ms 200 > $ROOT/ab.log 2>&1; echo "== ab rc=$?"; tail -n 18 $ROOT/ab.log
OUT=$ROOT/ncu NCU_SOURCE=0 NCU_CASES="fwd 128 16384 0 fa3lite" \
  NCU_EXTRA_METRICS=breakdown:lts__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,lts__t_sectors_srcunit_ltcfabric.sum \
  timeout 120 bash tools/speed_round.sh ncu > /dev/null 2>&1
grep -E "lts__|dram__|duration" "$ROOT/ncu/ncu_metrics.txt" | head -n 40
