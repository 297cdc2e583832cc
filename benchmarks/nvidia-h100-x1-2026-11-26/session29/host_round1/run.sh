#!/usr/bin/env bash
# Session 29, host_round1 (issue 10): where the SDPA entry's training step spends host time beside
# flash_attn_func and cuDNN (tools/host_autograd_profile.py: interleaved per-call times on autograd's
# device thread and on the calling thread, then cProfile of each fa3lite entry); and the decode
# step's host profile (tools/decode_probe.py host).
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
timeout 200 python3 tools/host_autograd_profile.py --out $OUT/host_autograd.json > $OUT/host_autograd.log 2>&1; echo "rc $?" >> $OUT/host_autograd.log
timeout 150 python3 tools/decode_probe.py host > $OUT/decode_host.log 2>&1; echo "rc $?" >> $OUT/decode_host.log
head -30 $OUT/host_autograd.log; grep "us host" $OUT/decode_host.log
