#!/usr/bin/env bash
# Session 60 (carry .peers/p4 after calls with p1-p3 left FA4's other parts): FA4's forward at d = 128
# full 16k under ncu with lts__throughput's sub-metrics, L2 sectors read / written by the SMs, hit rate
# and DRAM bytes (metrics only), beside ours from call 6 (our L2 throughput was twice FA4's in call 5).
OUT=$OUT/ncu NCU_SOURCE=0 NCU_CASES="fwd 128 16384 0 fa4" \
  NCU_EXTRA_METRICS=breakdown:lts__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,lts__t_sectors_srcunit_ltcfabric.sum \
  timeout 200 bash tools/speed_round.sh peers_last ncu > /dev/null 2>&1
grep -E "lts__|dram__|duration|Ghz" "$OUT/ncu/ncu_metrics.txt" | head -n 40
