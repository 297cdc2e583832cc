#!/usr/bin/env bash
# Session 31, tune_round1: the d=64 causal forward at 1k/2k (0.86 of cuDNN at 1k in final2) against
# 64-key block tiles (tune64.py: fwd_tune's interleaved sweep, each candidate checked for accuracy
# first, cuDNN timed in alternation).
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PYTHONPATH
timeout 400 python3 benchmarks/nvidia-h100-x1-2026-11-26/session31/tune_round1/tune64.py 2>&1 | tee $OUT/tune.log | tail -30
