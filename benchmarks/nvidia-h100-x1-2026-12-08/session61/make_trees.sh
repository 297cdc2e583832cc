#!/usr/bin/env bash
# Session 61: the variant trees of call1.sh, made from this tree (fwd_early_wait.diff applied) where it
# runs (here or on the device): _v8 = 1/16 of a thread's scores exponentiated before the P.V wait
# (this tree: 1/8); _va = 1/8 and O rescaled every block, right after the wait, with no vote (FA4's
# way: the 64 FMULs of d = 128 then sit among the remaining MUFUs).
set -euo pipefail
cd "$(dirname "$0")/../../.."
for v in _v8 _va; do rm -rf "$v" && mkdir "$v" && cp -r cuda_src fa3lite "$v"/; done
f=cuda_src/attention/fwd_consumer.cuh
grep -q 'constexpr int kEarlyExp2 = kBlockN / 8;' "$f" || { echo "make_trees.sh: apply fwd_early_wait.diff first" >&2; exit 1; }
sed -i 's|constexpr int kEarlyExp2 = kBlockN / 8;|constexpr int kEarlyExp2 = kBlockN / 16;|' _v8/$f
python3 - "_va/$f" <<'PY'
import sys
path = sys.argv[1]
t = open(path).read()
old = """    release(sm.v_empty(prev.stage), tid);
    softmax.exponentiate<kBlockN, kEarlyExp2>(s, p.scale_log2, offset);
    convert_p(s, pa);
    rescale_o(o, corr, moved);
"""
new = """    release(sm.v_empty(prev.stage), tid);
    scale_rows(o, corr);
    softmax.exponentiate<kBlockN, kEarlyExp2>(s, p.scale_log2, offset);
    convert_p(s, pa);
    (void)moved;
"""
assert old in t, "make_trees.sh: the overlapped loop changed"
open(path, "w").write(t.replace(old, new))
PY
echo "trees: _v8 _va"
