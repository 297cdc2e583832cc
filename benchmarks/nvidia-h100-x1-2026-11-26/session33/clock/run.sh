#!/usr/bin/env bash
# Session 33, device call 2 (right after peers_a): FA4 staged; SM clock / power / energy per call in a
# sustained loop (tools/clock_probe.py) for the forward and backward cells that trail FA4 or cuDNN,
# then the peers' kernel names and launch shapes at the short causal forward (ncu LaunchStats).
set -u
OUT=${OUT:-/tmp/out}
source .peers/b/install.sh > "$OUT/install.log" 2>&1 || { echo "FA4 install failed"; tail "$OUT/install.log"; }
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv | tee "$OUT/device.txt"
timeout 420 python3 tools/clock_probe.py --impl fa3lite,cudnn,fa4 --seconds 2.5 --rounds 2 \
  --cases "fwd 64 16384 0;fwd 128 16384 0;fwd 128 16384 1;fwd 64 1024 1;bwd 64 16384 0;bwd 128 4096 0" \
  > "$OUT/clock.log" 2>&1; echo "== clock rc=$?"
cat "$OUT/clock.log"
for impl in cudnn fa4 fa3lite; do
  timeout 90 ncu --clock-control none --profile-from-start off --section LaunchStats --section Occupancy --section SpeedOfLight \
    python3 tools/ncu_probe.py fwd 64 1024 1 $impl > "$OUT/launch_fwd64c1k_$impl.txt" 2>&1
  echo "== ncu launch $impl rc=$?"
  grep -E "^\s+[a-zA-Z_].*\(|Grid Size|Block Size|Registers Per|Shared Memory Per Block|Duration|Waves Per SM|Achieved Occ" "$OUT/launch_fwd64c1k_$impl.txt" | head -30
done
