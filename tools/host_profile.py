"""Where the host time of a small fa3lite call goes (issue 10), for whichever fa3lite is importable.

    python3 tools/host_profile.py [--out FILE.json]

At B=1, S=128, H=16, d=128, bf16, full mask, on the current GPU:
  * host microseconds per call, issued back to back (median of 5 batches of 200 calls), for
    flash_attn_func without grad, with inputs requiring grad (forward only), and forward+backward
    (torch.autograd.grad); scaled_dot_product_attention and the custom op without grad;
  * the same entries and torch SDPA on cuDNN timed interleaved (batch by batch: a slow spell of the
    machine hits all alike), the SDPA calls as the bench makes them (transposed views in and out);
  * a cProfile of 2,000 no-grad calls with every function's own time put into one of the stages
    below (profiling inflates Python-heavy stages, so the shares are relative; the first figures
    are the real cost).
"""
from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import pstats
import statistics
import sys
import time

import torch

STAGES = (   # (stage, substrings of "file:function" that belong to it), first match wins
    ("tensor maps", ("tma.py",)),
    ("parameter packing", ("params.py", "pack_into", "_FwdPlan.__init__")),
    ("launch", ("launch.py", "cdriver.py", "driver.py", "_cuda_getCurrentRawStream")),
    ("output allocation", ("torch.empty", "torch.zeros", "torch.full", "contiguous")),
    ("validation", ("checks.py", "callkey.py", "fallback.py:is_empty")),
    ("autograd bookkeeping", ("function.py", "Function", "apply", "autograd")),
)


def _stage(key: str) -> str:
    for stage, needles in STAGES:
        if any(n in key for n in needles):
            return stage
    return "other (dispatch, wrappers)"


def host_us(step, calls=200, batches=5) -> float:
    for _ in range(20):
        step()
    times = []
    for _ in range(batches):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            step()
        times.append((time.perf_counter() - t0) / calls * 1e6)
        torch.cuda.synchronize()
    return statistics.median(times)


def _steps(fa3lite, q, k, v, dout, leaves) -> dict:
    """name -> (step, grad mode, context factory or None): flash_attn_func, the SDPA entry (on (B, H,
    S, D) views, and as the bench calls it: transposed views in and out) and torch SDPA on cuDNN (the
    bench's way), without grad, with inputs requiring grad, and forward + backward."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    fn, entry = fa3lite.flash_attn_func, fa3lite.scaled_dot_product_attention
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def adapted(f, a, b, c):
        return f(a.transpose(1, 2), b.transpose(1, 2), c.transpose(1, 2)).transpose(1, 2)

    ours, theirs = None, lambda: sdpa_kernel(SDPBackend.CUDNN_ATTENTION)   # entered per batch, as the bench does
    return {
        "flash fwd": (lambda: fn(q, k, v), False, ours),
        "flash fwd_grad": (lambda: fn(*leaves), True, ours),
        "flash fwd_bwd": (lambda: torch.autograd.grad(fn(*leaves), leaves, dout), True, ours),
        "sdpa entry fwd (B, H, S, D) views": (lambda: entry(qt, kt, vt), False, ours),
        "sdpa entry fwd (bench adapter)": (lambda: adapted(entry, q, k, v), False, ours),
        "sdpa entry fwd_grad (bench adapter)": (lambda: adapted(entry, *leaves), True, ours),
        "cudnn fwd (bench adapter)": (lambda: adapted(sdpa, q, k, v), False, theirs),
        "cudnn fwd_grad (bench adapter)": (lambda: adapted(sdpa, *leaves), True, theirs),
        "cudnn fwd_bwd (bench adapter)": (lambda: torch.autograd.grad(adapted(sdpa, *leaves), leaves, dout), True,
                                          theirs),
    }


def _interleaved(steps: dict, calls: int = 200, rounds: int = 9) -> dict:
    """Median host microseconds of each (step, grad mode, context factory or None), the steps
    alternating batch by batch; the context is entered around each batch."""
    times = {name: [] for name in steps}
    for step, grad, context in steps.values():
        with torch.set_grad_enabled(grad), (context() if context else contextlib.nullcontext()):
            for _ in range(20):
                step()
    for _ in range(rounds):
        for name, (step, grad, context) in steps.items():
            with torch.set_grad_enabled(grad), (context() if context else contextlib.nullcontext()):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(calls):
                    step()
                times[name].append((time.perf_counter() - t0) / calls * 1e6)
                torch.cuda.synchronize()
    return {name: statistics.median(t) for name, t in times.items()}


def _profile(call, calls: int = 1000, grad: bool = False):
    """(us per call by stage, top functions by own time) of ``call`` under cProfile (no grad unless
    ``grad``)."""
    prof = cProfile.Profile()
    with torch.set_grad_enabled(grad):
        for _ in range(20):
            call()
        torch.cuda.synchronize()
        prof.enable()
        for _ in range(calls):
            call()
        prof.disable()
    torch.cuda.synchronize()
    stages: dict[str, float] = {}
    top = []
    for (file, line, func), (cc, nc, tt, ct, callers) in pstats.Stats(prof).stats.items():
        key = f"{file.rsplit('/', 1)[-1]}:{func}"
        stages[_stage(key)] = stages.get(_stage(key), 0.0) + tt / calls * 1e6
        top.append((tt / calls * 1e6, nc // calls, key))
    top.sort(reverse=True)
    return (dict(sorted(stages.items(), key=lambda kv: -kv[1])),
            [f"{us:7.2f} us  x{n}  {key}" for us, n, key in top[:15]])


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out")
    args = p.parse_args()
    import fa3lite

    q, k, v, dout = (torch.randn(1, 128, 16, 128, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    leaves = [t.detach().requires_grad_(True) for t in (q, k, v)]
    fn = fa3lite.flash_attn_func
    with torch.no_grad():
        fwd = host_us(lambda: fn(q, k, v))
    fwd_grad = host_us(lambda: fn(*leaves))
    fwd_bwd = host_us(lambda: torch.autograd.grad(fn(*leaves), leaves, dout))
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
    with torch.no_grad():
        sdpa = host_us(lambda: fa3lite.scaled_dot_product_attention(qt, kt, vt))
        op = host_us(lambda: torch.ops.fa3lite.fwd(q, k, v, 128 ** -0.5, False, 0))

    with torch.no_grad():
        sdpa_views = host_us(lambda: fa3lite.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), scale=128 ** -0.5,
            backend="fa3lite").transpose(1, 2))
        out, lse = fn(q, k, v, return_lse=True)
    # The backward as autograd's device thread runs it, here on the main thread (cProfile sees one
    # thread only): the op's implementation with every gradient.
    from fa3lite import ops

    import inspect

    extra = {"checked": True} if "checked" in inspect.signature(ops._bwd_impl).parameters else {}

    def bwd_impl():
        return ops._bwd_impl(dout, q, k, v, out, lse, 128 ** -0.5, False, 0, False, "auto", True, True, **extra)

    bwd = host_us(bwd_impl)
    fwd_stages, fwd_top = _profile(lambda: fn(q, k, v))
    sdpa_stages, sdpa_top = _profile(lambda: fa3lite.scaled_dot_product_attention(qt, kt, vt))
    interleaved = _interleaved(_steps(fa3lite, q, k, v, dout, leaves))
    bwd_stages, bwd_top = _profile(bwd_impl)
    # A whole training step of the op, with autograd's engine on this thread so cProfile sees it.
    with torch.autograd.set_multithreading_enabled(False):
        step_stages, step_top = _profile(lambda: torch.autograd.grad(fn(*leaves), leaves, dout), grad=True)
    result = {
        "fa3lite": fa3lite.__file__, "device": torch.cuda.get_device_name(),
        "host_us": {"fwd": fwd, "fwd_grad": fwd_grad, "fwd_bwd": fwd_bwd, "sdpa_fwd": sdpa,
                    "sdpa_fwd on transposed views, scale, backend='fa3lite'": sdpa_views,
                    "op_fwd (torch.ops.fa3lite.fwd)": op, "bwd (ops._bwd_impl, main thread)": bwd},
        "interleaved_us": interleaved,
        "profiled_us_per_call_by_stage": fwd_stages, "profiled_top": fwd_top,
        "sdpa_profiled_us_per_call_by_stage": sdpa_stages, "sdpa_profiled_top": sdpa_top,
        "bwd_profiled_us_per_call_by_stage": bwd_stages, "bwd_profiled_top": bwd_top,
        "fwd_bwd_profiled_us_per_call_by_stage": step_stages, "fwd_bwd_profiled_top": step_top,
    }
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
