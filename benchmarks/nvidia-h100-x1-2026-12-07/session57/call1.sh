#!/usr/bin/env bash
# Session 57, call 1 (carry ["_vo"]): session 56's prepared round, run as it was committed. Set-up on
# the CPU side as that script's header says (_vo = main at 56194ea, then fold_dq_tmastore.diff applied).
bash benchmarks/nvidia-h100-x1-2026-12-07/session56/next_round/run.sh > $OUT/run.log 2>&1; tail -c 6000 $OUT/run.log
