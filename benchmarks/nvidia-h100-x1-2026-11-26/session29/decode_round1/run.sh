#!/usr/bin/env bash
# Session 29, decode_round1 (issue 13): where a decode step's GPU time goes at small batches --
# each kernel of the step from CUDA-graph replays (fa3lite beside SDPA), the split kernel's per-CTA
# events (traced build), and the host profile of back-to-back calls. Tree: session start + probes.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv > $OUT/gpu.txt
timeout 150 python3 tools/decode_probe.py timeline --out $OUT/timeline.json > $OUT/timeline.log 2>&1; echo "rc $?" >> $OUT/timeline.log
timeout 100 python3 tools/decode_probe.py trace --out $OUT/trace.json > $OUT/trace.log 2>&1; echo "rc $?" >> $OUT/trace.log
timeout 150 python3 tools/decode_probe.py host > $OUT/host.log 2>&1; echo "rc $?" >> $OUT/host.log
tail -3 $OUT/timeline.log $OUT/trace.log; grep "us host" $OUT/host.log
