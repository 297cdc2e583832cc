"""Where a training step's host time goes (issue 10): forward + backward through flash_attn_func, through
the SDPA entry (the bench's adapter: transposed views in and out) and through torch SDPA on cuDNN.

At the bench's host shape (B=1, S=128, H=16, d=128, bf16, full mask): per-call host microseconds of
each entry (interleaved rounds, median), with the autograd engine on its device thread (torch's
default) and on the calling thread; then a cProfile of each fa3lite entry on the calling thread
(so the backward's Python shows up), own time per function, top rows.

    python3 tools/host_autograd_profile.py [--out FILE.json]
"""
import argparse
import cProfile
import io
import pstats

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import fa3lite
from host_peer_effect import B, D, H, S, measure, report   # tools/ is the script's folder, first on sys.path


def entries():
    do = torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16)
    leaves = [torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3)]
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def flash():
        return torch.autograd.grad(fa3lite.flash_attn_func(*leaves, backend="fa3lite"), leaves, do)

    def entry():
        q, k, v = (t.transpose(1, 2) for t in leaves)
        out = fa3lite.scaled_dot_product_attention(q, k, v, backend="fa3lite").transpose(1, 2)
        return torch.autograd.grad(out, leaves, do)

    def entry_bhsd():   # the same without the adapter's views: inputs already (B, H, S, D) leaves
        return torch.autograd.grad(fa3lite.scaled_dot_product_attention(*bhsd, backend="fa3lite"), bhsd, do_bhsd)

    def cudnn():
        q, k, v = (t.transpose(1, 2) for t in leaves)
        return torch.autograd.grad(sdpa(q, k, v).transpose(1, 2), leaves, do)

    bhsd = [t.detach().transpose(1, 2).contiguous().requires_grad_(True) for t in leaves]
    do_bhsd = do.transpose(1, 2).contiguous()
    cudnn_ctx = lambda: sdpa_kernel(SDPBackend.CUDNN_ATTENTION)   # noqa: E731
    return {"flash_attn_func": (flash, torch.enable_grad), "sdpa_entry": (entry, torch.enable_grad),
            "sdpa_entry_bhsd_leaves": (entry_bhsd, torch.enable_grad), "cudnn": (cudnn, cudnn_ctx)}


def profile(fn, ctx, calls=300, rows=22):
    pr = cProfile.Profile()
    with ctx():
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        pr.enable()
        for _ in range(calls):
            fn()
        pr.disable()
        torch.cuda.synchronize()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(rows)
    return s.getvalue()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    table = entries()
    res = {"engine_thread": measure(table)}
    torch.autograd.set_multithreading_enabled(False)
    res["calling_thread"] = measure(table)
    report(res, a.out)
    for name in ("flash_attn_func", "sdpa_entry", "sdpa_entry_bhsd_leaves"):
        print(f"===== cProfile {name} (engine on the calling thread, 300 calls)")
        print(profile(*table[name]))


if __name__ == "__main__":
    main()
