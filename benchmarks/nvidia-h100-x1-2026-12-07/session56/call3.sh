#!/usr/bin/env bash
# Session 56, call 3: why the folded dQ loses (call 1: 0.73-0.98 of HEAD). The main kernel's length
# (tools/timeline_round.sh) of HEAD (_vo), the pipelined fold (.), and three cost probes that give
# wrong dq on purpose (never landed; built from the pipelined tree by
# probes.py, this folder):
#   d1 (_vd1)  the count-down as a relaxed atomic, no proxy fence before it
#   d2 (_vd2)  no count-down (the converter gets no blocks); the wait for the adds stays
#   d3 (_vd3)  d2 without the wait for the adds: all the fold costs but its per-visit work
set -u
export PYTHONUNBUFFERED=1
OUT=$OUT bash tools/timeline_round.sh "before=_vo pipe=. d1=_vd1 d2=_vd2 d3=_vd3 d3=_vd3 d2=_vd2 d1=_vd1 pipe=. before=_vo" \
  "64 4096 0" "64 1024 1"
