"""Does running FA4 in a process change the host time of the calls timed after it? (issue 10)

The bench times host cost per implementation in one process, FA4 before fa3lite's SDPA entry; in
its last run that entry read twice flash_attn_func, where a process without FA4 had read them
alike. This times, at the bench's host shape (B=1, S=128, H=16, d=128, bf16, full mask), each entry
in interleaved rounds (median of rounds, each 200 calls back to back), then runs FA4 as the bench
does (forward, forward with grad, forward+backward), then times everything again.

    python3 tools/host_peer_effect.py [--out FILE.json]
"""
import argparse
import json
import statistics
import time

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import fa3lite

B, S, H, D = 1, 128, 16, 128


def per_call_us(fn, ctx, calls=200):
    with ctx():
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        dt = time.perf_counter() - t
        torch.cuda.synchronize()
    return dt / calls * 1e6


def cases():
    q, k, v, do = (torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    leaves = [t.detach().requires_grad_(True) for t in (q, k, v)]
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def fa3(qq, kk, vv):
        return fa3lite.flash_attn_func(qq, kk, vv, backend="fa3lite")

    def entry(qq, kk, vv):
        return fa3lite.scaled_dot_product_attention(qq.transpose(1, 2), kk.transpose(1, 2), vv.transpose(1, 2),
                                                    backend="fa3lite").transpose(1, 2)

    def cudnn(qq, kk, vv):
        return sdpa(qq.transpose(1, 2), kk.transpose(1, 2), vv.transpose(1, 2)).transpose(1, 2)

    out = {}
    for name, fn, ctx in (("fa3lite", fa3, torch.no_grad), ("sdpa_entry", entry, torch.no_grad),
                          ("cudnn", cudnn, lambda: sdpa_kernel(SDPBackend.CUDNN_ATTENTION))):
        out[f"{name} fwd"] = (lambda fn=fn: fn(q, k, v)), ctx
        grad_ctx = torch.enable_grad if ctx is torch.no_grad else ctx
        out[f"{name} fwd_grad"] = (lambda fn=fn: fn(*leaves)), grad_ctx
        out[f"{name} fwd_bwd"] = (lambda fn=fn: torch.autograd.grad(fn(*leaves), leaves, do)), grad_ctx
    return out, (q, k, v, do, leaves)


def measure(table, rounds=7):
    """{name: median host us per call} of table's {name: (call, context factory)}, after a warm-up,
    in interleaved rounds (tools/host_autograd_profile.py uses it too)."""
    got = {name: [] for name in table}
    for name, (fn, ctx) in table.items():   # warm up (compiles, plans)
        per_call_us(fn, ctx, calls=20)
    for _ in range(rounds):
        for name, (fn, ctx) in table.items():
            got[name].append(per_call_us(fn, ctx))
    return {name: round(statistics.median(v), 1) for name, v in got.items()}


def report(res: dict, out: str | None) -> None:
    """Print a probe's results as JSON and write them to ``out`` when given (the host probes share it)."""
    print(json.dumps(res, indent=1))
    if out:
        with open(out, "w") as f:
            json.dump(res, f, indent=1)


def run_fa4(inputs):
    from flash_attn.cute import flash_attn_func as fa4

    q, k, v, do, leaves = inputs
    for _ in range(50):
        with torch.no_grad():
            fa4(q, k, v)
        o = fa4(*leaves)
        o = o[0] if isinstance(o, tuple) else o
        torch.autograd.grad(o, leaves, do)
    torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    table, inputs = cases()
    res = {"before_fa4": measure(table)}
    try:
        run_fa4(inputs)
        res["after_fa4"] = measure(table)
    except Exception as exc:  # noqa: BLE001 - report what stopped the second half
        res["fa4_error"] = f"{type(exc).__name__}: {exc}"
    report(res, a.out)


if __name__ == "__main__":
    main()
