#!/usr/bin/env bash
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
timeout 400 python3 benchmarks/nvidia-h100-x1-2026-11-27/session41/round3/probe.py > $OUT/probe.jsonl 2> $OUT/probe.err
echo rc $?
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
