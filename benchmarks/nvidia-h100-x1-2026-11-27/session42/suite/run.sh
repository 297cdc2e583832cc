#!/usr/bin/env bash
# Session 42 suite: every test marked gpu (as tools/speed_round.sh's tests step runs them) on 2238470,
# the session's code commit (release build); section 41's run of it stopped at 58% when device time ran out.
set -u
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/gpu.txt
timeout 570 python3 -m pytest -q -p no:cacheprovider -m gpu tests > $OUT/suite.log 2>&1
echo "== suite rc=$?"; tail -3 $OUT/suite.log
