#!/usr/bin/env bash
# Session 25, round 2 (FA4 call 2 of 2): install FA4; host time before/after FA4 runs in the process;
# ncu launch configuration of FA4's forward and backward at d=64 causal 1k; FA4 traces unavailable.
set -u
source .peers/b/install.sh > $OUT/install.log 2>&1
export PYTHONPATH=$PWD:$PYTHONPATH PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
timeout 300 python3 tools/host_peer_effect.py --out $OUT/host_peer_effect.json > $OUT/host_peer_effect.log 2>&1
M="launch__grid_size,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__shared_mem_per_block_static,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,sm__warps_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum"
for c in "fwd 64 1024 1 fa4" "bwd 64 1024 1 fa4"; do
  echo "===== CASE $c" >> $OUT/ncu.txt
  timeout 120 ncu --clock-control none --profile-from-start off --metrics "$M" python3 tools/ncu_probe.py $c >> $OUT/ncu.txt 2>&1
  echo "rc=$?" >> $OUT/ncu.txt
done
cat $OUT/host_peer_effect.log | tail -60
grep -E "CASE|^  [a-zA-Z_].*\(|launch__|gpu__time|hmma|inst_exec|warps_active|rc=" $OUT/ncu.txt | sed 's/  */ /g' | head -80
