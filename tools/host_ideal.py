"""How close a training step of fa3lite can get to cuDNN's host time (issue 10): the least a Python
autograd node around the launch plans costs, beside what flash_attn_func costs now.

At the bench's host shape (B=1, S=128, H=16, d=128, bf16, full mask), per-call host microseconds
(interleaved rounds, medians), with autograd's engine on its device thread (torch's default) and on
the calling thread:
  flash           forward + backward through fa3lite.flash_attn_func and torch.autograd.grad;
  ideal           an autograd.Function whose forward calls the forward launch plan and whose backward
                  calls the backward plan, nothing else (set_materialize_grads(False): no zero dLSE);
  ideal_zeros     the same with torch's default (a zero dLSE materialized each backward);
  floor           an autograd.Function launching nothing in its backward (one torch kernel forward);
  cudnn           torch SDPA on cuDNN (transposed views, as the bench calls it);
  sdpa_entry      fa3lite.scaled_dot_product_attention called the same way;
  fplan / bplan   the two launch plans called alone (no autograd); empty ...: ways to allocate.

    python3 tools/host_ideal.py [--out FILE.json]
"""
import argparse

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import fa3lite
from fa3lite import callkey
from host_peer_effect import B, D, H, S, measure, report   # tools/ is the script's folder, first on sys.path


def plans(leaves, do):
    """(forward plan, backward plan) that flash_attn_func built for these leaves."""
    for _ in range(2):   # the first call remembers the signature, the second runs its plan
        torch.autograd.grad(fa3lite.flash_attn_func(*leaves, backend="fa3lite"), leaves, do)
    key = callkey.flash_key(*leaves, None, False, False, False, "fa3lite")
    fplan = callkey.plan(key)
    (bplan,) = fplan.backward_plans.values()
    return fplan, bplan


def ideal_function(fplan, bplan, materialize):
    class Ideal(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v):
            out, lse = fplan(q, k, v)
            ctx.save_for_backward(q, k, v, out, lse)
            ctx.set_materialize_grads(materialize)
            ctx.mark_non_differentiable(lse)
            return out, lse

        @staticmethod
        def backward(ctx, dout, dlse):
            return bplan(dout, *ctx.saved_tensors)

    return Ideal


class Floor(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v):
        return q * 1.0

    @staticmethod
    def backward(ctx, g):
        return g, None, None


def table():
    do = torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16)
    leaves = [torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3)]
    fplan, bplan = plans(leaves, do)
    ideal = ideal_function(fplan, bplan, False)
    ideal_zeros = ideal_function(fplan, bplan, True)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    plain = [t.detach() for t in leaves]
    with torch.no_grad():
        out, lse = fplan(*plain)

    def cudnn():
        q, k, v = (t.transpose(1, 2) for t in leaves)
        return torch.autograd.grad(sdpa(q, k, v).transpose(1, 2), leaves, do)

    def entry():   # fa3lite's SDPA, called as the bench calls cuDNN
        q, k, v = (t.transpose(1, 2) for t in leaves)
        out = fa3lite.scaled_dot_product_attention(q, k, v, backend="fa3lite").transpose(1, 2)
        return torch.autograd.grad(out, leaves, do)

    grad = torch.enable_grad
    return {
        "flash": (lambda: torch.autograd.grad(fa3lite.flash_attn_func(*leaves, backend="fa3lite"), leaves, do), grad),
        "ideal": (lambda: torch.autograd.grad(ideal.apply(*leaves)[0], leaves, do), grad),
        "ideal_zeros": (lambda: torch.autograd.grad(ideal_zeros.apply(*leaves)[0], leaves, do), grad),
        "floor": (lambda: torch.autograd.grad(Floor.apply(*leaves), leaves[:1], do), grad),
        "sdpa_entry": (entry, grad),
        "cudnn": (cudnn, lambda: sdpa_kernel(SDPBackend.CUDNN_ATTENTION)),
        "flash fwd_grad": (lambda: fa3lite.flash_attn_func(*leaves, backend="fa3lite"), grad),
        "ideal fwd_grad": (lambda: ideal.apply(*leaves), grad),
        "fplan": (lambda: fplan(*plain), torch.no_grad),
        "bplan": (lambda: bplan(do, *plain, out, lse), torch.no_grad),
        "empty": (lambda: torch.empty((1024,), device="cuda"), torch.no_grad),
        "empty full args": (lambda: torch.empty((1, 128, 16, 128), dtype=torch.bfloat16, device=do.device),
                            torch.no_grad),
        "new_empty": (lambda: do.new_empty((1, 128, 16, 128)), torch.no_grad),
        "empty_like": (lambda: torch.empty_like(do), torch.no_grad),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    cases = table()
    res = {"device": torch.cuda.get_device_name(), "engine_thread": measure(cases)}
    with torch.autograd.set_multithreading_enabled(False):
        res["calling_thread"] = measure({k: v for k, v in cases.items() if k in
                                         ("flash", "ideal", "ideal_zeros", "floor", "cudnn", "sdpa_entry")})
    report(res, a.out)


if __name__ == "__main__":
    main()
