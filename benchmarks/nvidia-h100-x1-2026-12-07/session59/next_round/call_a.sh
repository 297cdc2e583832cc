#!/usr/bin/env bash
# Next round, call 1 (carry .peers/p1): FA4's first part left on the machine, then session 59's
# call7.sh (the d = 128 full forward's key blocks re-swept at 4k / 16k).
set -u
ROOT=$OUT
OUT=$ROOT/peers bash tools/speed_round.sh peers_part
OUT=$ROOT bash benchmarks/nvidia-h100-x1-2026-12-07/session59/call7.sh
