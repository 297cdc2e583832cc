#!/usr/bin/env bash
# Session 29, host_round2 (issue 10): the bench's SDPA adapter (transposed views in and out) per
# implementation, with and without it, and on a Python node that launches nothing
# (tools/host_adapter_probe.py), twice.
cd "$(dirname "$0")/../../../.."
export PYTHONPATH=$PWD:$PWD/tools:$PYTHONPATH
for i in 1 2; do
  timeout 150 python3 tools/host_adapter_probe.py --out $OUT/adapter_$i.json > $OUT/adapter_$i.log 2>&1; echo "rc $?" >> $OUT/adapter_$i.log
done
cat $OUT/adapter_1.log $OUT/adapter_2.log
