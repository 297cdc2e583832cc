#!/usr/bin/env bash
# Session 61: the backward A/B's trees, made here before call2.sh (git-ignored copies of HEAD's
# cuda_src and fa3lite, each with one of this folder's backward diffs): _vo = HEAD, _vs = HEAD +
# bwd_stats.diff, _vd = HEAD + bwd_ds_early.diff. The working tree itself carries both (and the
# forward's diff). Carry ["_vo", "_vs", "_vd"].
set -euo pipefail
cd "$(dirname "$0")/../../.."
here=benchmarks/nvidia-h100-x1-2026-12-08/session61
for pair in _vo: _vs:bwd_stats _vd:bwd_ds_early; do
  dir=${pair%%:*}; diff=${pair#*:}
  rm -rf "$dir" && mkdir "$dir"
  git archive HEAD cuda_src fa3lite | tar -x -C "$dir"
  if [ -n "$diff" ]; then
    git apply --directory="$dir" --include="$dir/cuda_src/*" --include="$dir/fa3lite/*" "$here/$diff.diff"
  fi
done
echo "trees: _vo _vs _vd"
