"""Session 56's cost probes of the folded dQ (call3.sh): copies of the pipelined tree with one edit
each to cuda_src/attention/bwd_dq.cuh. They give wrong dq on purpose and only time the main kernel.
Run from the project root with fold_dq_rebased.diff applied: python3 <this>.
  d1  the count-down as a relaxed atomic, no proxy fence before it
  d2  no count-down (the converter gets no blocks); the writer's wait for its adds stays
  d3  d2 without that wait: all of the fold's cost but its per-visit work
  d4  d1, but the block reaching 0 is not queued (the atomics without the converter)
  d5  d1, the converter takes each queued block and does not convert it (call 5)"""
import pathlib
import shutil
import subprocess

DQ = "cuda_src/attention/bwd_dq.cuh"
FENCE_ATOM = ("  gmem::fence_proxy_async_global();   // the adds (async proxy) before the count-down's release\n"
              "  if (gmem::atom_acq_rel_add(")
NO_COUNT = ("  if (blk < 0) return;\n", "  if (blk < 0 || blk >= 0) return;\n")
PUSH = ", -1) == 1) push_folded(sm, blk);"
PUSH_NEVER = ", -1) == 1 && blk < 0) push_folded(sm, blk);"
CONVERT_NEVER = ("    convert_folded(p, sm, blk);\n", "    if (blk == -7) convert_folded(p, sm, blk);\n")
RELAXED = (FENCE_ATOM, "  if (gmem::atom_relaxed_add(")
WAIT = ("    if (!first) tma::wait_group<2>();\n", "")
PROBES = {
    "_vd1": [RELAXED],
    "_vd2": [NO_COUNT],
    "_vd3": [NO_COUNT, WAIT],
    "_vd4": [RELAXED, (PUSH, PUSH_NEVER)],
    "_vd5": [RELAXED, CONVERT_NEVER],
}

for tree, edits in PROBES.items():
    shutil.rmtree(tree, ignore_errors=True)
    pathlib.Path(tree).mkdir()
    subprocess.run(f"tar -c cuda_src fa3lite | tar -x -C {tree}", shell=True, check=True)
    path = pathlib.Path(tree, DQ)
    text = path.read_text()
    for old, new in edits:
        assert text.count(old) == 1, (tree, old)
        text = text.replace(old, new)
    path.write_text(text)
