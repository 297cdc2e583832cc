#!/usr/bin/env bash
# Session 39 round3: the whole GPU test suite on a5e8bd1 (walking variants), then ncu of the varlen
# backward beside the dense one at equal lengths (7 x 2341, full mask, D = 256 and 128): what the
# varlen kernel's 3-7% (RESULTS section 38) is spent on.
set -u
cd "$(dirname "$0")/../../../.."
HERE=$(dirname "$0")
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
python3 -m pip install -q -e ".[test,bench]" > /dev/null 2>&1
export PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/logs/device.txt
timeout 330 python3 -m pytest -q -p no:cacheprovider -rf --tb=short -m gpu tests > $OUT/logs/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(tail -n1 $OUT/logs/gpu_tests.log)"
for d in 256 128; do
  PYTHONPATH=$PWD timeout 150 ncu --clock-control none --profile-from-start off -k fa3lite_bwd \
    --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy --section SchedulerStats \
    --section MemoryWorkloadAnalysis \
    --metrics gpu__time_duration.sum,smsp__inst_executed.sum,sm__cycles_active.avg,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum,sm__ctas_launched.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
    python3 $HERE/varlen_ncu.py $d > $OUT/logs/ncu_d$d.txt 2>&1
  echo "ncu d=$d rc=$?"
  grep -E "fa3lite_bwd|Duration|gpu__time_duration|smsp__inst_executed.sum|sm__cycles_active.avg|hit_rate|dram__bytes|ctas_launched|hmma|Compute \(SM\) Throughput|Memory Throughput|No Eligible|Issued Warp" $OUT/logs/ncu_d$d.txt
done
tar -czf $OUT/logs.tgz -C $OUT logs && rm -rf $OUT/logs
