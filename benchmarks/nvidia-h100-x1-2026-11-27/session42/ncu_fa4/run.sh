#!/usr/bin/env bash
# Session 42 ncu_fa4: FA4's D = 64 backward main kernel (full and causal, 4k, bf16, 16k tokens, width
# 2048) as a per-SASS source page (tools/ncu_sass.sh), to set its instruction mix beside ours
# (tools/ncu_stalls.py --opcodes; ours: session41/ncu_round2, the same kernel code as HEAD). Three
# calls: `bash run.sh 1` (carry .peers/p1), `bash run.sh 2` (.peers/p2), `bash run.sh 3` (.peers/p3:
# installs FA4, then profiles FA4's kernel and ours again).
set -u
case "$1" in
  1|2) bash tools/speed_round.sh peers_part; exit 0 ;;
esac
source .peers/p3/install.sh > $OUT/install.log 2>&1
export PYTHONPATH=$PWD:${PYTHONPATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt
for c in 0 1; do
  bash tools/ncu_sass.sh 'kernel_cutlass.*[Bb]ackward[Ss]m90' bwd 64 4096 $c fa4
  bash tools/ncu_sass.sh 'fa3lite_bwd$' bwd 64 4096 $c fa3lite
done
for f in $OUT/*.csv.gz; do python3 tools/ncu_stalls.py $f --opcodes > ${f%.csv.gz}.opcodes.txt; done
ls -la $OUT
