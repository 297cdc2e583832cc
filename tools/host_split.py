"""Where a training step of the op spends its host time, measured interleaved (issue 10).

    python3 tools/host_split.py [--out FILE.json] [--rounds 15]

At B=1, S=128, H=16, d=128, bf16, full mask, on the current GPU, host microseconds per call (calls
issued back to back, 200 per sample; the steps alternate sample by sample so that a slow spell of
the machine hits all of them; medians over the rounds):
  fa3lite / sdpa / cudnn / floor
                            fwd+backward through torch.autograd.grad ("sdpa": fa3lite's
                            scaled_dot_product_attention, called like cudnn's, on (B, H, S, D)
                            views made once); "floor" is a Python autograd.Function launching one
                            elementwise kernel each way, the least any Python autograd node costs;
  ... engine here           the same with autograd's engine on the calling thread
                            (torch.autograd.set_multithreading_enabled(False));
  fa3lite body              with --split: the time inside fa3lite's backward node
                            (ops._EagerAttention.backward), measured on the thread that runs it, per
                            call, and inside the functions it runs (the timers add a little to each,
                            and to the fa3lite and sdpa rows);
  fa3lite separate          with --separate: the fa3lite step with the backward node's gradients and
                            work buffer each in an allocation of its own (_BwdPlan's shared=False),
                            in the same alternation; "separate / shared" is the median over the
                            rounds of the two steps' ratio (engine thread and calling thread).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--split", action="store_true", help="also time the functions inside the backward node")
    p.add_argument("--separate", action="store_true",
                   help="also time the fa3lite step with the backward's buffers in allocations of their own")
    args = p.parse_args()
    import fa3lite
    from fa3lite import ops
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k, v, dout = (torch.randn(1, 128, 16, 128, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    leaves = [t.detach().requires_grad_(True) for t in (q, k, v)]
    # SDPA-style calls take torch's (B, H, S, D): views of the same tensors, made once (as the bench's
    # host table times them), so no call pays view ops (or, with grad, their autograd nodes)
    qt, kt, vt, dout_t = (t.transpose(1, 2) for t in (q, k, v, dout))
    leaves_t = [t.detach().requires_grad_(True) for t in (qt, kt, vt)]

    def cudnn(a, b, c):   # called inside sdpa_kernel(CUDNN_ATTENTION), entered once (as the bench does)
        return torch.nn.functional.scaled_dot_product_attention(a, b, c)

    sdpa = fa3lite.scaled_dot_product_attention

    class Floor(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, c):
            return a * 1.0

        @staticmethod
        def backward(ctx, g):
            return g * 1.0, None, None

    body = {"s": 0.0, "n": 0}
    real_backward = ops._EagerAttention.backward

    def timed_backward(ctx, dout_, dlse):
        t0 = time.perf_counter()
        try:
            return real_backward(ctx, dout_, dlse)
        finally:
            body["s"] += time.perf_counter() - t0
            body["n"] += 1

    inner: dict[str, list[float]] = {}
    if args.split:
        ops._EagerAttention.backward = staticmethod(timed_backward)
        import fa3lite.hopper as hopper
        from fa3lite.hopper import bwd as hopper_bwd

        def wrap(owner, name, label):
            real = getattr(owner, name)

            def timed(*a, **kw):
                t0 = time.perf_counter()
                try:
                    return real(*a, **kw)
                finally:
                    inner.setdefault(label, [0.0, 0])
                    inner[label][0] += time.perf_counter() - t0
                    inner[label][1] += 1
            setattr(owner, name, timed)

        for owner, name in ((ops, "_grads"), (ops, "_bwd_impl"), (hopper, "backward"),
                            (hopper_bwd._BwdPlan, "__call__"), (hopper_bwd._BwdPlan, "_buffer"),
                            (hopper_bwd.launch.Prepared, "launch"), (torch, "empty"), (ops, "_planned_grads")):
            if hasattr(owner, name):
                wrap(owner, name, f"{getattr(owner, '__name__', owner)}.{name}")
    fn = fa3lite.flash_attn_func
    steps = {
        "fa3lite": lambda: torch.autograd.grad(fn(*leaves), leaves, dout),
        "cudnn": lambda: torch.autograd.grad(cudnn(*leaves_t), leaves_t, dout_t),
        "sdpa": lambda: torch.autograd.grad(sdpa(*leaves_t), leaves_t, dout_t),
        "floor": lambda: torch.autograd.grad(Floor.apply(*leaves), leaves[:1], dout),
        "fa3lite fwd_grad": lambda: fn(*leaves),
        "cudnn fwd_grad": lambda: cudnn(*leaves_t),
        "sdpa fwd_grad": lambda: sdpa(*leaves_t),
        "fa3lite fwd": lambda: fn(q, k, v),
        "cudnn fwd": lambda: cudnn(qt, kt, vt),
        "sdpa fwd": lambda: sdpa(qt, kt, vt),
    }
    separate = {"on": False}
    if args.separate:
        from fa3lite.hopper import bwd as hopper_bwd
        shared_call = hopper_bwd._BwdPlan.__call__

        def plan_call(self, *a, shared=False, **kw):   # one frame more for both fa3lite steps alike
            return shared_call(self, *a, shared=shared and not separate["on"], **kw)
        hopper_bwd._BwdPlan.__call__ = plan_call
        steps["fa3lite separate"] = steps["fa3lite"]
    backend = sdpa_kernel(SDPBackend.CUDNN_ATTENTION)
    backend.__enter__()
    samples: dict[str, list[float]] = {}
    calls = 200
    for step in steps.values():
        for _ in range(20):
            step()
    for _ in range(args.rounds):
        for here in (False, True):
            with torch.autograd.set_multithreading_enabled(not here):
                for name, step in steps.items():
                    if here and "fwd" in name:
                        continue
                    separate["on"] = name == "fa3lite separate"
                    body.update(s=0.0, n=0)
                    inner.clear()
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    for _ in range(calls):
                        step()
                    us = (time.perf_counter() - t0) / calls * 1e6
                    torch.cuda.synchronize()
                    label = name + (", engine here" if here else "")
                    samples.setdefault(label, []).append(us)
                    if name == "fa3lite" and args.split:
                        key = "fa3lite body" + (", engine here" if here else "")
                        samples.setdefault(key, []).append(body["s"] / max(body["n"], 1) * 1e6)
                        for label, (secs, n) in inner.items():   # per backward call
                            samples.setdefault(f"  {label} x{n // calls}" + (", engine here" if here else ""),
                                               []).append(secs / calls * 1e6)
    backend.__exit__(None, None, None)
    result = {name: statistics.median(v) for name, v in samples.items()}
    if args.separate:
        for here in ("", ", engine here"):
            result["separate / shared" + here] = statistics.median(
                a / b for a, b in zip(samples["fa3lite separate" + here], samples["fa3lite" + here]))
    result = {"device": torch.cuda.get_device_name(), "rounds": args.rounds,
              "host_us": {k: round(v, 3 if "/" in k else 1) for k, v in result.items()}}
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
