#!/usr/bin/env bash
# Session 36, final run call 1 of 2: FA4 staging (the first part of the big wheel, carry .peers/a).
OUT=${OUT:-/tmp/out} bash tools/speed_round.sh peers_a
