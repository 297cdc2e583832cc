#!/usr/bin/env bash
# Session 36, final run 2, call 2 of 2 (carry .peers/b, right after call 1 = final1/run_a.sh): FA4
# installed, then the bf16 final grid (host table now first), its files in one tarball (final1 lost
# results.json to the eight-file limit). The fp16 backward of final1 stands.
export OUT=${OUT:-/tmp/out}
FINAL_DTYPES=bf16 FINAL_LIMIT=480 bash tools/speed_round.sh peers_b final
