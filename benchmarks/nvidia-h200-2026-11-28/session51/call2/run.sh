#!/usr/bin/env bash
# Session 51's call 2: session 50's next_round/run.sh with two backward rows added.
# Where the d = 256 causal 1k forward's time goes now that O leaves from registers (kDirectO) and the next tile's Q loads under the epilogue -- the furthest forward cell
# (430 vs FA4's 459 TFLOP/s, section 49). Section 37's traces put 16-18% of a 1k causal tile outside
# the loop at d = 64/128; the same fit (per block + fixed, Q wait, epilogue, gap to the next tile) at
# d = 256 tells whether the tile's fixed costs or its per-block rate hold it back.
#  1. tools/trace_probe.py (traced builds: compare only with each other): d = 256 causal and full at
#     1k, causal at 4k; d = 64 causal 1k for comparison with section 37's row.
#  2. ncu (tools/ncu_probe.py, --clock-control none): d = 256 causal 1k, ours and cuDNN's.
set -u
export PYTHONUNBUFFERED=1
for args in "256 1 1k" "256 0 1k" "256 1 4k" "64 1 1k"; do
  set -- $args
  PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 90 python3 tools/trace_probe.py --mode fwd --head-dim $1 \
    --causal $2 --seqlen $3 >> $OUT/trace.jsonl 2>> $OUT/trace.err
  echo "trace d=$1 causal=$2 S=$3 rc=$?"
done
# the backward's per-CTA phases (section 25's table) at the two cells furthest behind FA4
for args in "64 1 1k" "128 0 16k"; do
  set -- $args
  PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 120 python3 tools/trace_probe.py --mode bwd --head-dim $1 \
    --causal $2 --seqlen $3 >> $OUT/trace_bwd.jsonl 2>> $OUT/trace.err
  echo "trace bwd d=$1 causal=$2 S=$3 rc=$?"
done
for impl in fa3lite cudnn; do
  # the probe brackets one call with cudaProfilerStart/Stop: every kernel of that call is profiled
  PYTHONPATH=$PWD FA3LITE_CACHE_DIR=/tmp/fa3c timeout 150 ncu --clock-control none --profile-from-start off \
    --section SpeedOfLight --section WarpStateStats --section Occupancy \
    python3 tools/ncu_probe.py fwd 256 1024 1 $impl > $OUT/ncu_$impl.txt 2>&1
  echo "ncu $impl rc=$?"
done
