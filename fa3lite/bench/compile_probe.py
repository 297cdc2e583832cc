"""Child process of compile_time: first-call and cached-call times of fa3lite variants.

python -m fa3lite.bench.compile_probe --dtype bf16 --variants 128:0,128:1
prints {"setup_s": ...} (the runtime's one-time setup), then one JSON object a line per
variant: head_dim, causal, fwd_first_s, fwd_warm_ms,
bwd_first_s, bwd_warm_ms; fwd_error or bwd_error in place of a part that raised.
The parent sets FA3LITE_CACHE_DIR (cold or filled cache).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch

PROBE_SHAPE = dict(batch=1, seqlen=512, heads=2)  # the grid's shortest length: same kernels
WARM_CALLS = 5


def _sync_time(fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    result = fn()
    torch.cuda.synchronize()
    return time.perf_counter() - t0, result


def probe_variant(fn, head_dim: int, causal: bool, dtype) -> dict:
    s = PROBE_SHAPE
    shape = (s["batch"], s["seqlen"], s["heads"], head_dim)
    q, k, v, dout = (torch.randn(shape, device="cuda", dtype=dtype) for _ in range(4))
    leaves = [t.requires_grad_(True) for t in (q, k, v)]
    scale = head_dim ** -0.5

    def fwd():
        return fn(*leaves, softmax_scale=scale, causal=causal, backend="fa3lite")

    rec = {"head_dim": head_dim, "causal": causal}
    try:
        rec["fwd_first_s"], out = _sync_time(fwd)
        rec["fwd_warm_ms"] = statistics.median(_sync_time(fwd)[0] for _ in range(WARM_CALLS)) * 1e3
    except Exception as exc:
        rec["fwd_error"] = _reason(exc)
        return rec

    def bwd():
        return torch.autograd.grad(out, leaves, dout, retain_graph=True)

    try:
        rec["bwd_first_s"], _ = _sync_time(bwd)
        rec["bwd_warm_ms"] = statistics.median(_sync_time(bwd)[0] for _ in range(WARM_CALLS)) * 1e3
    except Exception as exc:
        rec["bwd_error"] = _reason(exc)
    return rec


def _reason(exc) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {' '.join(lines[:3])}"[:240]


# One-time work of fa3lite's runtime that is no variant's compile: imports, loading NVRTC, hashing
# the sources for the cache key, the CUDA driver. Done and timed first, so the first variant's row
# holds its own compile only. Each step is optional: a runtime without it is still probed.
_SETUP_STEPS = (
    ("fa3lite.hopper", None),
    ("fa3lite.runtime.cache", None),
    ("fa3lite.runtime.compile", "nvrtc_version"),
    ("fa3lite.runtime.sources", "fingerprint"),
    ("cuda.core", None),
)


def _runtime_setup() -> None:
    import importlib

    for module, fn in _SETUP_STEPS:
        try:
            mod = importlib.import_module(module)
            if fn is not None:
                getattr(mod, fn)()
        except Exception:
            continue


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fa3lite.bench.compile_probe")
    ap.add_argument("--dtype", choices=("bf16", "fp16"), default="bf16")
    ap.add_argument("--variants", required=True, help="comma list of HEAD_DIM:CAUSAL(0/1)")
    args = ap.parse_args(argv)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
    # Context creation and cuBLAS setup are not compile time: do them before the first call.
    a = torch.randn(256, 256, device="cuda", dtype=dtype)
    (a @ a).sum().item()
    t0 = time.perf_counter()
    import fa3lite

    _runtime_setup()
    print(json.dumps({"setup_s": time.perf_counter() - t0}), flush=True)
    fn = fa3lite.flash_attn_func
    for item in args.variants.split(","):
        d, c = item.split(":")
        print(json.dumps(probe_variant(fn, int(d), c == "1", dtype)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
