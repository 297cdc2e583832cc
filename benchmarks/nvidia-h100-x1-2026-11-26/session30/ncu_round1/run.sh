#!/usr/bin/env bash
# Session 30, ncu_round1 (issue 8): why the forward at d=64 loses ~14% per FLOP with a causal mask
# at 16k (FA4 runs causal as fast as full there) -- the same 192 x 128 persistent tile both ways.
# ncu of fa3lite full and causal at 16k and causal at 4k, and FA4-free cuDNN causal 16k beside.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
for c in "fwd 64 16384 0 fa3lite" "fwd 64 16384 1 fa3lite" "fwd 64 4096 1 fa3lite" "fwd 64 16384 1 cudnn"; do
  echo "===== CASE $c" >> $OUT/ncu.txt
  timeout 120 ncu --clock-control none --profile-from-start off --section SpeedOfLight --section WarpStateStats \
    --section SchedulerStats --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis \
    python3 tools/ncu_probe.py $c >> $OUT/ncu.txt 2>&1
  echo "rc=$?" >> $OUT/ncu.txt
done
grep -E "CASE|Duration|fa3lite_fwd|Grid Size|Block Size|Registers Per|Compute \(SM\) Throughput|Issue Slots Busy|Executed Ipc Active|Stall|Warp Cycles Per Issued|Achieved Active Warps|No Eligible|Active Warps Per Scheduler|Eligible Warps" $OUT/ncu.txt | head -150
