"""torch.library custom ops ``fa3lite::fwd`` and ``fa3lite::bwd``: fakes, autograd, backend choice.

Being custom ops with fake implementations, they appear in torch.compile graphs as single nodes
(fullgraph works) and pass torch.library.opcheck. The choice between the Hopper kernels and the torch
fallback happens inside the real implementations, on real tensors, so it also holds in compiled code
(the strides and alignment the kernels need are known only there).

fwd(q (B, Sq, Hq, D), k (B, Sk, Hk, D), v (B, Sk, Hk, D), softmax_scale, causal, causal_offset,
    deterministic, backend) -> (out (B, Sq, Hq, D) contiguous in q.dtype, lse (B, Hq, Sq) fp32 contiguous)
bwd(dout, q, k, v, out, lse, softmax_scale, causal, causal_offset, deterministic, backend)
    -> (dq, dk, dv) contiguous, shaped and typed like q, k, v
``deterministic`` is unused by fwd; it sits in fwd's schema so the autograd formula can pass it on.
``lse`` is not differentiable (as in torch's own flash attention): its gradient is not propagated.
"""
from __future__ import annotations

import torch

from . import checks, fallback

_NAMESPACE = "fa3lite"
_hopper_module = None
_hopper_error: str | None = None


def _hopper():
    """fa3lite.hopper, imported on first use (it pulls in the CUDA runtime layer); None if it fails."""
    global _hopper_module, _hopper_error
    if _hopper_module is None and _hopper_error is None:
        try:
            from . import hopper
        except Exception as exc:  # noqa: BLE001 - any failure means: no kernels, say why
            _hopper_error = f"{type(exc).__name__}: {exc}"
        else:
            _hopper_module = hopper
    return _hopper_module


def _kernel_module(q, k, v, softmax_scale: float, backend: str, entry: str):
    """fa3lite.hopper when its ``entry`` ("forward"/"backward") can run these inputs, else None.

    backend "torch" -> None; "fa3lite" -> raises InputError listing every reason the kernels cannot;
    "auto" -> FallbackWarning (once per reason set) and None.
    """
    checks.raise_if_any(checks.backend_problems(backend), f"fa3lite {entry}")
    if backend == "torch":
        return None
    reasons = checks.kernel_reasons(q, k, v, softmax_scale)
    module = None
    if not reasons:
        module = _hopper()
        if module is None:
            reasons.append(f"fa3lite.hopper: expected an importable module, got {_hopper_error}")
        elif getattr(module, entry, None) is None:
            reasons.append(f"fa3lite.hopper.{entry}: expected a function, got none")
    if reasons:
        if backend == "fa3lite":
            checks.raise_if_any(reasons, f"fa3lite {entry} with backend='fa3lite'")
        checks.warn_fallback_once(reasons, "the torch fallback (fa3lite.fallback)")
        return None
    if fallback.is_empty(q, k):
        return None  # nothing to compute: the fallback returns the fixed result without a launch
    return module


def _fwd_impl(q, k, v, softmax_scale, causal, causal_offset, deterministic=False, backend="auto"):
    """The forward both entry points run (see attention())."""
    module = _kernel_module(q, k, v, softmax_scale, backend, "forward")
    if module is None:
        return fallback.forward(q, k, v, softmax_scale, causal, causal_offset)
    out, lse = module.forward(q, k, v, softmax_scale, causal, causal_offset)
    # The fake promises contiguous results; compiled code relies on those strides.
    return out.contiguous(), lse.contiguous()


@torch.library.custom_op(f"{_NAMESPACE}::fwd", mutates_args=())
def fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, softmax_scale: float, causal: bool,
        causal_offset: int, deterministic: bool = False, backend: str = "auto"
        ) -> tuple[torch.Tensor, torch.Tensor]:
    return _fwd_impl(q, k, v, softmax_scale, causal, causal_offset, deterministic, backend)


@fwd.register_fake
def _fwd_fake(q, k, v, softmax_scale, causal, causal_offset, deterministic=False, backend="auto"):
    b, sq, hq, d = q.shape
    out = q.new_empty((b, sq, hq, d))
    lse = q.new_empty((b, hq, sq), dtype=torch.float32)
    return out, lse


def _bwd_impl(dout, q, k, v, out, lse, softmax_scale, causal, causal_offset, deterministic=False,
              backend="auto"):
    module = _kernel_module(q, k, v, softmax_scale, backend, "backward")
    if module is None:
        return fallback.backward(dout, q, k, v, out, lse, softmax_scale, causal, causal_offset)
    # dout comes from whatever follows attention; copying a misaligned one beats the slow path.
    dout, out = checks.tma_ready(dout), checks.tma_ready(out)
    dq, dk, dv = module.backward(dout, q, k, v, out, lse, softmax_scale, causal, causal_offset,
                                 deterministic)
    return dq.contiguous(), dk.contiguous(), dv.contiguous()


@torch.library.custom_op(f"{_NAMESPACE}::bwd", mutates_args=())
def bwd(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
        lse: torch.Tensor, softmax_scale: float, causal: bool, causal_offset: int,
        deterministic: bool = False, backend: str = "auto"
        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _bwd_impl(dout, q, k, v, out, lse, softmax_scale, causal, causal_offset, deterministic, backend)


@bwd.register_fake
def _bwd_fake(dout, q, k, v, out, lse, softmax_scale, causal, causal_offset, deterministic=False,
              backend="auto"):
    return (q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape))


def _setup_context(ctx, inputs, output):
    q, k, v, softmax_scale, causal, causal_offset, deterministic, backend = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse)
    ctx.attention_args = (softmax_scale, causal, causal_offset, deterministic, backend)
    ctx.mark_non_differentiable(lse)


def _backward(ctx, dout, dlse):
    q, k, v, out, lse = ctx.saved_tensors
    dq, dk, dv = torch.ops.fa3lite.bwd(dout, q, k, v, out, lse, *ctx.attention_args)
    return dq, dk, dv, None, None, None, None, None


fwd.register_autograd(_backward, setup_context=_setup_context)

FWD = torch.ops.fa3lite.fwd.default
BWD = torch.ops.fa3lite.bwd.default


class _EagerAttention(torch.autograd.Function):
    """Eager-mode twin of the custom op: same implementations, without the custom-op dispatch
    (~50 us a call on the GPU machine, more than the whole kernel launch path at small shapes)."""

    @staticmethod
    def forward(ctx, q, k, v, softmax_scale, causal, causal_offset, deterministic, backend):
        out, lse = _fwd_impl(q, k, v, softmax_scale, causal, causal_offset, deterministic, backend)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.attention_args = (softmax_scale, causal, causal_offset, deterministic, backend)
        ctx.mark_non_differentiable(lse)
        return out, lse

    @staticmethod
    def backward(ctx, dout, dlse):
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = _bwd_impl(dout, q, k, v, out, lse, *ctx.attention_args)
        return dq, dk, dv, None, None, None, None, None


def attention(q, k, v, softmax_scale: float, causal: bool, causal_offset: int, deterministic: bool,
              backend: str):
    """(out, lse): the custom op while torch.compile traces (one graph node, no break), the eager
    twin otherwise. Both run _fwd_impl / _bwd_impl, so results are identical."""
    if torch.compiler.is_compiling():
        return FWD(q, k, v, softmax_scale, causal, causal_offset, deterministic, backend)
    return _EagerAttention.apply(q, k, v, softmax_scale, causal, causal_offset, deterministic, backend)
