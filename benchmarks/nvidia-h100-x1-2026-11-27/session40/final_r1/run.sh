#!/usr/bin/env bash
# Session 40's first final run with FA4, superseded by final/ (tree of 2154741 but for one docstring,
# whose flat dQ-writer walk round3 then measured 5% slower at D = 64 causal 4k; four device calls back to
# back on one warm H100). FA4 staged with ../shared/tools/stage-fa4.sh, then tools/stage_fa4_parts.sh
# (the tracked tree, 22.6 MB, no longer leaves room for stage-fa4.sh's 46 MB part): three parts.
#   call 1 (carry .peers/p1): benchmarks/nvidia-h100-x1-2026-11-27/session40/round2/run.sh
#   call 2 (carry .peers/p2): bash tools/speed_round.sh peers_part
#   call 3 (carry .peers/p3): FINAL_DTYPES=bf16 FINAL_LIMIT=500 bash tools/speed_round.sh peers_last final
#   call 4 (same machine):    export PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:${PYTHONPATH:-};
#                             FINAL_DTYPES=fp16 bash tools/speed_round.sh final
# bf16/ and fp16/ are final.tgz of calls 3 and 4 unpacked.
