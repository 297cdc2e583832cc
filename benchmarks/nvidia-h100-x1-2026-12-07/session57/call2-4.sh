#!/usr/bin/env bash
# Session 57, calls 2-4 (carry .peers/p1, p2, p3 in turn; back to back on one warm machine): each
# leaves its part of FA4's big wheel in /root/peers (tools/stage_fa4_parts.sh).
bash tools/speed_round.sh peers_part
