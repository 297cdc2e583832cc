"""Sweep forward tile configs (kBlockN, stages, overlap) per head dim; print TFLOP/s per config.

--compile-only checks every candidate compiles spill-free (on a CPU); on a GPU each candidate is
first checked for accuracy at an odd shape, then timed at 16k tokens a batch (H = 2048 / d).
"""
import sys

from fa3lite import variants
from fa3lite.runtime.compile import CompileError, compile_spec

CANDIDATES = {
    64: [(128, 2, False), (128, 2, True), (192, 2, False), (192, 2, True), (176, 2, True), (128, 3, True)],
    128: [(128, 2, False), (128, 2, True), (176, 2, True), (176, 2, False), (128, 3, True), (112, 2, True)],
    256: [(80, 2, False), (80, 2, True), (64, 2, False), (64, 2, True)],
}


def configure(d, cand):
    variants.FWD_TILES[d] = (128, *cand)


def compiles(d, cand):
    configure(d, cand)
    v = variants.FwdVariant(d, "bf16", True)
    if v.smem_bytes > 227 * 1024:
        return False, "smem"
    try:
        log = compile_spec(v.spec()).log
    except CompileError as e:
        return False, str(e).splitlines()[-1][:100]
    return "0 bytes spill stores" in log, "ok" if "0 bytes spill stores" in log else "spills"


if __name__ == "__main__":
    if "--compile-only" in sys.argv:
        for d, cands in CANDIDATES.items():
            for c in cands:
                print(d, c, compiles(d, c))
        sys.exit(0)
    sys.path.insert(0, "tools")
    from fwd_smoke import bench, check
    import torch

    for d, cands in CANDIDATES.items():
        for c in cands:
            ok, why = compiles(d, c)
            if not ok:
                print(f"skip d={d} {c}: {why}")
                continue
            print(f"== d={d} kBlockN={c[0]} stages={c[1]} overlap={c[2]}", flush=True)
            if not (check(1, 333, 517, 2, 1, d, torch.bfloat16, True) and check(1, 333, 517, 2, 1, d, torch.bfloat16, False)):
                print("   WRONG: not timed")
                continue
            for causal in (False, True):
                for S in (4096, 16384):
                    bench(d, causal, S)
