#!/usr/bin/env bash
# Session 59, call 1: FA4 part 1 left on the machine (tools/stage_fa4_parts.sh; carry .peers/p1), then
# session 58's call5.sh as committed (the landed row max's debug forward and kv-cache tests, a d = 64
# tile sweep), with the sweep's limit cut to 260 s so the call fits 580 s.
set -u
ROOT=$OUT
OUT=$ROOT/peers bash tools/speed_round.sh peers_part
sed 's/timeout 300 python3 tools\/fwd_tune.py/timeout 260 python3 tools\/fwd_tune.py/' \
  benchmarks/nvidia-h100-x1-2026-12-07/session58/call5.sh > /tmp/call5.sh
OUT=$ROOT bash /tmp/call5.sh
