#!/usr/bin/env bash
# Session 25, round 1 (FA4 call 1 of 2): per-CTA traces of fwd/bwd at short and long S; ncu launch
# configuration of cuDNN's and our forward at d=64 causal 1k.
set -u
mkdir -p /root/peers && cp .peers/a/* /root/peers/
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt 2>&1
git log -1 --format=%H > $OUT/commit.txt 2>/dev/null
for c in "bwd 64 1 1k" "bwd 64 0 1k" "bwd 64 1 4k" "bwd 64 0 4k" "bwd 128 1 1k" "bwd 128 0 4k" "bwd 64 0 16k" \
         "fwd 64 1 1k" "fwd 64 0 1k" "fwd 128 0 1k" "fwd 128 1 1k" "fwd 64 0 4k"; do
  set -- $c
  echo "== $c" >> $OUT/trace.err
  timeout 120 python3 tools/trace_probe.py --mode $1 --head-dim $2 --causal $3 --seqlen $4 \
    --out $OUT/trace_$1_$2_$3_$4.npy >> $OUT/trace.jsonl 2>> $OUT/trace.err
done
M="launch__grid_size,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__shared_mem_per_block_static,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,launch__occupancy_limit_warps,sm__warps_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum"
for c in "fwd 64 1024 1 cudnn" "fwd 64 1024 1 fa3lite" "bwd 64 1024 1 cudnn"; do
  echo "===== CASE $c" >> $OUT/ncu.txt
  timeout 90 ncu --clock-control none --profile-from-start off --metrics "$M" python3 tools/ncu_probe.py $c >> $OUT/ncu.txt 2>&1
  echo "rc=$?" >> $OUT/ncu.txt
done
cat $OUT/trace.jsonl | cut -c1-1500
grep -E "CASE|^  [a-zA-Z_].*\(|launch__|gpu__time|hmma|inst_exec|warps_active|rc=" $OUT/ncu.txt | sed 's/  */ /g' | head -80
