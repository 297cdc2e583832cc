#!/usr/bin/env bash
# Session 40's final run with FA4: tree of 7f0db71 (source hash b908230f17ae4a2d; the meta's commit is
# the device copy's stale .git), FA4 4.0.0b36 staged with ../shared/tools/stage-fa4.sh and then
# tools/stage_fa4_parts.sh (three parts), three device calls back to back on one H100:
#   call 1 (carry _vo, .peers/p1): session40/round5/run.sh
#   call 2 (carry _vo, .peers/p2): session40/round6/run.sh
#   call 3 (carry .peers/p3):      FINAL_LIMIT=420 bash tools/speed_round.sh peers_last final
# bf16/ and fp16/ are call 3's final.tgz unpacked (fp16: the backward grid, cut at d=256 by its
# 110 s budget).
