#!/usr/bin/env bash
# Session 59, prepared (next_round/README.md, call 4; carry .peers/p4, which installs FA4 after calls 1-3
# left the other parts in /root/peers): tools/speed_round.sh's ncu step (which prints every case's
# metrics) for ours and FA4's main kernels in the final run's two furthest 16k cells: fwd d = 128 full
# (0.935 of FA4) and bwd d = 64 full (0.950; FA4's only: ours, the same SASS, is session57/call6).
OUT=$OUT/ncu NCU_CASES="fwd 128 16384 0 fa3lite;fwd 128 16384 0 fa4;bwd 64 16384 0 fa4" \
  timeout 560 bash tools/speed_round.sh peers_last ncu
tar -czf "$OUT/ncu.tgz" -C "$OUT" ncu && rm -rf "$OUT/ncu"   # one file back, whatever the count
