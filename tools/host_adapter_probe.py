"""What the bench's SDPA adapter (transposed views in and out, four view nodes in the autograd graph)
costs a training step, per implementation (issue 10).

At the bench's host shape (B=1, S=128, H=16, d=128, bf16, full mask), interleaved rounds (median),
autograd's engine on its device thread: forward + autograd.grad through cuDNN's SDPA and fa3lite's
SDPA entry, each with the adapter (inputs (B, S, H, D) leaves seen as (B, H, S, D) views, output
transposed back) and without it ((B, H, S, D) leaves), flash_attn_func, and a Python autograd
Function that launches nothing (forward returns an empty tensor, backward three empty ones) with
and without the adapter, which isolates the adapter's own cost on a Python node.

    python3 tools/host_adapter_probe.py [--out FILE.json]
"""
import argparse

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import fa3lite
from host_peer_effect import B, D, H, S, measure, report   # tools/ is the script's folder, first on sys.path


class _Nothing(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v):
        ctx.save_for_backward(q, k, v)
        return q.new_empty(q.shape)

    @staticmethod
    def backward(ctx, dout):
        q, k, v = ctx.saved_tensors
        return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def entries():
    bshd = [torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3)]
    bhsd = [t.detach().transpose(1, 2).contiguous().requires_grad_(True) for t in bshd]
    do = torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16)
    do_bhsd = do.transpose(1, 2).contiguous()
    sdpa = torch.nn.functional.scaled_dot_product_attention
    ours = fa3lite.scaled_dot_product_attention

    def adapted(fn):
        def step():
            q, k, v = (t.transpose(1, 2) for t in bshd)
            return torch.autograd.grad(fn(q, k, v).transpose(1, 2), bshd, do)
        return step

    def direct(fn):
        return lambda: torch.autograd.grad(fn(*bhsd), bhsd, do_bhsd)

    cudnn = lambda: sdpa_kernel(SDPBackend.CUDNN_ATTENTION)   # noqa: E731
    entry = lambda q, k, v: ours(q, k, v, backend="fa3lite")   # noqa: E731
    return {"cudnn adapter": (adapted(sdpa), cudnn), "cudnn bhsd leaves": (direct(sdpa), cudnn),
            "fa3lite sdpa adapter": (adapted(entry), torch.enable_grad),
            "fa3lite sdpa bhsd leaves": (direct(entry), torch.enable_grad),
            "flash_attn_func": (lambda: torch.autograd.grad(fa3lite.flash_attn_func(*bshd, backend="fa3lite"), bshd,
                                                            do), torch.enable_grad),
            "nothing adapter": (adapted(_Nothing.apply), torch.enable_grad),
            "nothing bhsd leaves": (direct(_Nothing.apply), torch.enable_grad)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    report({"engine_thread": measure(entries())}, a.out)


if __name__ == "__main__":
    main()
