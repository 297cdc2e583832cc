#!/usr/bin/env bash
# Session 41 suite: the GPU tests on ecee365, the session's last code commit (release build).
# Call 1 ran all of tests/ (CPU compile checks included) and hit the 560 s limit at 21%; call 2 ran
# tests/*_gpu.py (suite_gpu_files.log: 843 passed, 12 skipped); call 3 runs every test marked gpu,
# as tools/speed_round.sh's tests step does: the session's device time ran out at 284 s, partial log in
# suite_marked_gpu_partial.log.
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
timeout 560 python3 -m pytest -q -p no:cacheprovider -m gpu tests > $OUT/suite.log 2>&1
echo "== suite rc=$?"; tail -3 $OUT/suite.log
