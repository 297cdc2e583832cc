#!/usr/bin/env bash
# Session 43 GPU suite on f9f9a07 (release build), the first of the three back-to-back calls of the
# final run with FA4 (final/run.sh), carrying .peers/p1.
TEST_LIMIT=540 bash tools/speed_round.sh peers_part tests
