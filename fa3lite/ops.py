"""torch.library custom ops ``fa3lite::fwd`` and ``fa3lite::bwd``: validation, fakes, autograd, backend
choice.

Being custom ops with fake implementations, they appear in torch.compile graphs as single nodes
(fullgraph works) and pass torch.library.opcheck. The choice between the Hopper kernels and the torch
fallback happens inside the real implementations, on real tensors, so it also holds in compiled code
(the strides and alignment the kernels need are known only there). The ops may be called directly,
so each validates its arguments first (InputError naming every problem).

fwd(q (B, Sq, Hq, D), k (B, Sk, Hk, D), v (B, Sk, Hk, D), softmax_scale, causal, causal_offset,
    deterministic, backend, local_offset=None, softcap=0.0, sink=None)
    -> (out (B, Sq, Hq, D) contiguous in q.dtype, lse (B, Hq, Sq) fp32 contiguous)
bwd(dout, q, k, v, out, lse, softmax_scale, causal, causal_offset, deterministic, backend,
    need_dq=True, need_dkv=True, local_offset=None, softcap=0.0, sink=None)
    -> (dq, dk, dv, dsink) contiguous, shaped and typed like q, k, v, sink; a gradient that is not
       needed (need_dq / need_dkv False, no sink) comes back as an empty tensor of shape (0,) and
       costs nothing.
Mask: key j visible to query i iff (not causal or j <= i + causal_offset) and (local_offset is None or
j >= i + local_offset). softcap > 0: scores z = softcap * tanh(softmax_scale * q.k / softcap). sink:
None or (Hq,) learnable sink logits (fa3lite.fallback's docstring has the math); it gets a gradient.
``deterministic`` is unused by fwd; it sits in fwd's schema so the autograd formula can pass it on.
``lse`` is not differentiable (as in torch's own flash attention): its gradient is not propagated.

Autograd computes only the gradients the inputs need (``ctx.needs_input_grad``). A backward with
create_graph=True whose inputs require grad (double backward, Hessian-vector products) computes the
first-order gradients with the torch math (fa3lite.fallback), which autograd can differentiate to any
order; the kernels' gradients would carry no graph. (Under torch.compile, torch itself refuses double
backward through any compiled region.)

With backend "auto", a kernel that cannot be made ready (NVRTC compile error, module load error, a
missing optional import) falls back to the torch math with one FallbackWarning naming the cause; the
failure is remembered per kernel variant and device (fa3lite.runtime.launch). backend "fa3lite"
raises KernelUnavailable instead.
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from . import callkey, checks, fallback
from .errors import KernelUnavailable

_NAMESPACE = "fa3lite"
_hopper_module = None
_hopper_error: str | None = None
_FALLBACK = "the torch fallback (fa3lite.fallback)"


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


def _kernel_module(q, k, v, softmax_scale: float, backend: str, entry: str, softcap: float = 0.0, varlen=False):
    """fa3lite.hopper when its ``entry`` ("forward"/"backward"...) can run these inputs, else None.

    backend "torch" -> None; "fa3lite" -> raises InputError listing every reason the kernels cannot;
    "auto" -> FallbackWarning (once per kind of reason) and None. ``varlen``: q, k, v are (1, total,
    H, D) views of the packed tensors; the reasons name the packed tensors' dims.
    """
    if backend == "torch":
        return None
    reasons = checks.kernel_reasons(q, k, v, softmax_scale, softcap)
    if varlen:
        reasons = [checks.packed_reason(r) for r in reasons]
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
        checks.warn_fallback_once(reasons, _FALLBACK)
        return None
    if fallback.is_empty(q, k):
        return None  # nothing to compute: the fallback returns the fixed result without a launch
    return module


def _on_kernels(backend: str, run):
    """``run()`` on the Hopper kernels; None when their runtime failed and backend "auto" falls back
    (with one FallbackWarning per failing kernel variant, whose message names the cause)."""
    try:
        return run()
    except KernelUnavailable as exc:
        if backend == "fa3lite":
            raise
        checks.warn_fallback_once([f"fa3lite kernel {exc.kernel}: expected it to compile and load, "
                                   f"got {exc.cause}"], _FALLBACK)
        return None


def kernels_take(q, k, v, softmax_scale: float, softcap: float = 0.0) -> bool:
    """Whether the Hopper kernels take these validated inputs (no kernel reason, something to compute,
    fa3lite.hopper importable): the verdict a call signature remembered in fa3lite.callkey stands for."""
    if checks.kernel_reasons(q, k, v, softmax_scale, softcap) or fallback.is_empty(q, k):
        return False
    module = _hopper()
    return all(callable(getattr(module, entry, None)) for entry in ("forward", "backward"))


def varlen_kernels_take(q, k, v, softmax_scale: float, softcap: float, backend: str) -> bool:
    """Whether the varlen forward would run on the Hopper kernels for these validated (total, H, D)
    inputs with this backend (not "torch", not while torch.compile traces): then a caller that keeps
    the signature's launch plan (fa3lite/kvcache.py) may call it directly next time."""
    if backend == "torch" or torch.compiler.is_compiling():
        return False
    return (kernels_take(*(t.unsqueeze(0) for t in (q, k, v)), softmax_scale, softcap)
            and callable(getattr(_hopper(), "forward_varlen_plan", None)))


def varlen_page_rows(page_size: int, head_dim: int) -> int:
    """Rows of one in-place paged K/V copy for this page size (0: the kernels cannot read these pages
    in place; fa3lite.hopper.page_rows)."""
    return _hopper().page_rows(page_size, head_dim)


def varlen_forward_plan(q, k, v, batch: int, max_seqlen_q: int, softmax_scale: float, causal: bool,
                        causal_offset: int, local_offset: int | None, softcap: float, max_seqlen_k: int,
                        num_splits: int, pack_group: int = 1, paged: tuple[int, int] | None = None, grouped=None):
    """The varlen kernel's launch plan for inputs varlen_kernels_take accepted, with seqused_k and no
    sink: plan(q, k, v, cu_seqlens_q, cu_seqlens_k, None, seqused_k, None) -> (out, lse). The caller
    guarantees every query row belongs to a sequence (cu_seqlens_q a full partition), so out and lse
    are not pre-filled. paged: (page_size, pages_per_seq) reads K/V in place from a page pool
    (fa3lite.hopper.forward_varlen_plan; the plan then takes page_table last). grouped: None, or
    q is a decode step's queries (B, Sq, Hq, D) read in place (variants.GroupedRows, made by
    fa3lite.kvcache.step_rows), out / lse come back in the step's layout."""
    return _hopper().forward_varlen_plan(q, k, v, batch, max_seqlen_q, softmax_scale, causal, causal_offset,
                                         local_offset, softcap, False, True, max_seqlen_k, num_splits, True,
                                         pack_group, paged, grouped)


def kv_append_plan(k_cache, v_cache, k, v, cache_seqlens, batch_idx, page_table):
    """The KV-cache append kernel's launch for tensors of this (validated) signature, called with the
    same arguments; None where it cannot take them or cannot be loaded (the caller then appends with
    torch's ops; fa3lite.hopper.append)."""
    try:
        return _hopper().append_plan(k_cache, v_cache, k, v, cache_seqlens, batch_idx, page_table)
    except KernelUnavailable:
        return None


def forward_plan(q, k, v, softmax_scale: float, causal: bool, causal_offset: int, bhsd: bool = False,
                 local_offset: int | None = None, softcap: float = 0.0, sink=None):
    """The kernels' launch plan for this forward signature, once a call built one (else None)."""
    module = _hopper()
    find = getattr(module, "forward_plan", None)
    if find is None:
        return None
    return find(q, k, v, softmax_scale, causal, causal_offset, bhsd, local_offset, softcap, sink)


def kernel_sink(sink):
    """The sink as the kernels read it: (Hq,) float32 contiguous (the same tensor when it is one)."""
    return None if sink is None else sink.to(torch.float32).contiguous()


def _fwd_impl(q, k, v, softmax_scale, causal, causal_offset, deterministic=False, backend="auto",
              checked=False, local_offset=None, softcap=0.0, sink=None):
    """The forward both entry points run, on validated arguments (see attention()). ``checked``: the
    caller established kernels_take for these inputs."""
    module = _hopper() if checked else _kernel_module(q, k, v, softmax_scale, backend, "forward", softcap)
    if module is not None:
        result = _on_kernels(backend, lambda: module.forward(q, k, v, softmax_scale, causal, causal_offset,
                                                             local_offset, softcap, kernel_sink(sink)))
        if result is not None:
            return result      # fresh contiguous tensors
    out, lse = fallback.forward(q, k, v, softmax_scale, causal, causal_offset, local_offset, softcap, sink)
    # The fake promises contiguous results; compiled code relies on those strides.
    return out.contiguous(), lse.contiguous()


def _fwd_bhsd_impl(q, k, v, softmax_scale, causal, deterministic=False, backend="auto", checked=False):
    """(out (B, Hq, Sq, D), lse) of torch-layout inputs (B, H, S, D), top-left causal: the kernels'
    torch-layout plan when the caller established kernels_take, else _fwd_impl on flash_attn-layout
    views."""
    if checked:
        result = _on_kernels(backend, lambda: _hopper().forward_bhsd(q, k, v, softmax_scale, causal))
        if result is not None:
            return result
    out, lse = _fwd_impl(*(t.transpose(1, 2) for t in (q, k, v)), softmax_scale, causal, 0, deterministic,
                         backend, checked)
    return out.transpose(1, 2), lse


def _bwd_impl(dout, q, k, v, out, lse, softmax_scale, causal, causal_offset, deterministic=False,
              backend="auto", need_dq=True, need_dkv=True, checked=False, fwd_plan=None, local_offset=None,
              softcap=0.0, sink=None):
    """(dq, dk, dv, dsink) on validated arguments; a gradient that is not needed (dsink: no sink) is
    None. ``checked``: the forward established kernels_take for (q, k, v); ``fwd_plan``: the launch
    plan that made out and lse from them (hopper.backward then finds its plan under a short key)."""
    module = _hopper() if checked else _kernel_module(q, k, v, softmax_scale, backend, "backward", softcap)
    result = None
    if module is not None:
        # dout comes from whatever follows attention: a layout the tensor maps cannot take is copied
        # by the kernels' host side (hopper.bwd), which beats the slow path.
        result = _on_kernels(backend, lambda: module.backward(
            dout, q, k, v, out, lse, softmax_scale, causal, causal_offset, deterministic,
            need_dq=need_dq, need_dkv=need_dkv, fwd_plan=fwd_plan, local_offset=local_offset, softcap=softcap,
            sink=kernel_sink(sink)))
    if result is None:
        result = fallback.backward(dout, q, k, v, out, lse, softmax_scale, causal, causal_offset,
                                   need_dq=need_dq, need_dkv=need_dkv, local_offset=local_offset, softcap=softcap,
                                   sink=sink)
        result = tuple(None if g is None else g.contiguous() for g in result)
    if sink is None:
        return result + (None,)
    dq, dk, dv, dsink = result
    return dq, dk, dv, dsink.to(sink.dtype)


def remember_if_kernels_take(key, q, k, v, softmax_scale, backend, softcap=0.0) -> bool:
    """After a call's checks passed: remember its signature (fa3lite.callkey) when the kernels take
    it, so that the next call with that signature skips the checks. Returns whether they take it."""
    if key is None or backend == "torch" or not kernels_take(q, k, v, softmax_scale, softcap):
        return False
    callkey.remember(key)
    return True


def _op_tensors(tensors, sink):
    return tensors if sink is None else tensors + (sink,)


@torch.library.custom_op(f"{_NAMESPACE}::fwd", mutates_args=())
def fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, softmax_scale: float, causal: bool,
        causal_offset: int, deterministic: bool = False, backend: str = "auto", local_offset: int | None = None,
        softcap: float = 0.0, sink: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    key = callkey.op_key("fwd", _op_tensors((q, k, v), sink),
                         (softmax_scale, causal, causal_offset, deterministic, backend, local_offset, softcap,
                          sink is None))
    checked = callkey.passed(key)
    if not checked:
        checks.raise_if_any(checks.fwd_op_problems(q, k, v, softmax_scale, backend, softcap, sink), "fa3lite::fwd")
        checked = remember_if_kernels_take(key, q, k, v, softmax_scale, backend, softcap)
    return _fwd_impl(q, k, v, softmax_scale, causal, causal_offset, deterministic, backend, checked,
                     local_offset, softcap, sink)


@fwd.register_fake
def _fwd_fake(q, k, v, softmax_scale, causal, causal_offset, deterministic=False, backend="auto",
              local_offset=None, softcap=0.0, sink=None):
    b, sq, hq, _ = q.shape
    out = q.new_empty((b, sq, hq, v.shape[3]))
    lse = q.new_empty((b, hq, sq), dtype=torch.float32)
    return out, lse


@torch.library.custom_op(f"{_NAMESPACE}::bwd", mutates_args=())
def bwd(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
        lse: torch.Tensor, softmax_scale: float, causal: bool, causal_offset: int,
        deterministic: bool = False, backend: str = "auto", need_dq: bool = True, need_dkv: bool = True,
        local_offset: int | None = None, softcap: float = 0.0, sink: torch.Tensor | None = None
        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    key = callkey.op_key("bwd", _op_tensors((dout, q, k, v, out, lse), sink),
                         (softmax_scale, causal, causal_offset, deterministic, backend, need_dq, need_dkv,
                          local_offset, softcap, sink is None))
    checked = callkey.passed(key)
    if not checked:
        checks.raise_if_any(checks.bwd_op_problems(dout, q, k, v, out, lse, softmax_scale, backend, softcap, sink),
                            "fa3lite::bwd")
        checked = remember_if_kernels_take(key, q, k, v, softmax_scale, backend, softcap)
    grads = _bwd_impl(dout, q, k, v, out, lse, softmax_scale, causal, causal_offset, deterministic, backend,
                      need_dq, need_dkv, checked, None, local_offset, softcap, sink)
    return tuple(t.new_empty((0,)) if g is None else g for g, t in zip(grads, (q, k, v, q)))


@bwd.register_fake
def _bwd_fake(dout, q, k, v, out, lse, softmax_scale, causal, causal_offset, deterministic=False,
              backend="auto", need_dq=True, need_dkv=True, local_offset=None, softcap=0.0, sink=None):
    return (q.new_empty(q.shape if need_dq else (0,)), k.new_empty(k.shape if need_dkv else (0,)),
            v.new_empty(v.shape if need_dkv else (0,)),
            sink.new_empty(sink.shape) if sink is not None else q.new_empty((0,)))


def _needs_graph(dout, q, k, v, sink) -> bool:
    """True in a backward with create_graph=True whose gradients must themselves be differentiable."""
    return (torch.is_grad_enabled() and not torch.compiler.is_compiling()
            and any(t is not None and t.requires_grad for t in (dout, q, k, v, sink)))


class Call(NamedTuple):
    """Everything of an attention call but its tensors, as the autograd nodes keep it (``ctx.call``):
    the mask in the ops' convention (module docstring), the flags, and for the eager twin whether
    the kernels take the inputs (``checked``), their launch plan or None, and the layout."""
    softmax_scale: float
    causal: bool
    causal_offset: int
    local_offset: int | None
    softcap: float
    deterministic: bool
    backend: str
    checked: bool = False
    plan: object = None
    bhsd: bool = False


def _grads(ctx, dout, run_kernels, sink_index):
    """The backward formula shared by the custom op and its eager twin: (dq, dk, dv, None ..., dsink)
    with dsink at ``sink_index`` (the sink's position among the Function's inputs), only the
    gradients ``ctx.needs_input_grad`` asks for. ``ctx.call.bhsd``: the tensors were saved in torch's
    (B, H, S, D) order (the twin's SDPA path); the kernels take flash_attn's, as plain views here."""
    q, k, v, out, lse, sink = ctx.saved_tensors
    call = ctx.call
    if call.bhsd:
        q, k, v, out, dout = (t.transpose(1, 2) for t in (q, k, v, out, dout))
    need_q, need_k, need_v = ctx.needs_input_grad[:3]
    need_dkv = need_k or need_v
    if _needs_graph(dout, q, k, v, sink):
        grads = fallback.backward(dout, q, k, v, out, lse, call.softmax_scale, call.causal, call.causal_offset,
                                  need_dq=need_q, need_dkv=need_dkv, local_offset=call.local_offset,
                                  softcap=call.softcap, sink=sink)
        dq, dk, dv, dsink = grads if sink is not None else grads + (None,)
    else:
        dq, dk, dv, dsink = run_kernels(dout, q, k, v, out, lse, call.softmax_scale, call.causal, call.causal_offset,
                                        call.deterministic, call.backend, need_q, need_dkv,
                                        local_offset=call.local_offset, softcap=call.softcap, sink=sink)
    if call.bhsd:
        dq, dk, dv = (None if g is None else g.transpose(1, 2) for g in (dq, dk, dv))
    # one gradient per input the call passed (a custom op's ctx counts only those, not defaults)
    grads = [None] * len(ctx.needs_input_grad)
    grads[:3] = dq if need_q else None, dk if need_k else None, dv if need_v else None
    if sink_index < len(grads) and ctx.needs_input_grad[sink_index]:
        grads[sink_index] = dsink
    return tuple(grads)


def _planned_grads(ctx, dout):
    """The eager node's (dq, dk, dv, None, None) straight from the backward launch plan that
    hopper.bwd.backward keeps on the forward plan for this dout layout and these flags, or None when
    the call needs _grads: no forward plan, no backward plan yet for this layout, a sink, an operand
    the tensor maps cannot take as it is, or a backward that records a graph (grad mode on). The
    plan reads only addresses, so torch-layout (B, H, S, D) tensors go in as they are and their
    gradients come out in that order (torch_layout); its key is that of their (B, S, H, D) views,
    as _grads passes them."""
    call = ctx.call
    plan = call.plan
    if plan is None or torch.is_grad_enabled():
        return None
    q, k, v, out, lse, sink = ctx.saved_tensors
    if sink is not None:
        return None
    need_q, need_k, need_v = ctx.needs_input_grad[:3]
    need_dkv = need_k or need_v
    stride, shape = dout.stride(), dout.shape
    if call.bhsd:
        stride, shape = (stride[0], stride[2], stride[1], stride[3]), (shape[0], shape[2], shape[1], shape[3])
    backward = plan.backward_plans.get((stride, dout.data_ptr() % 16 == 0, shape, dout.dtype,
                                        call.deterministic and need_q, need_q, need_dkv))
    if backward is None or backward.any_copy:
        return None
    # bhsd: gradients in torch's order; shared: views of one allocation (an autograd node's, not an op's)
    dq, dk, dv = backward(dout, q, k, v, out, lse, None, call.bhsd, shared=True)
    return dq if need_q else None, dk if need_k else None, dv if need_v else None, None, None


def _op_grads(dout, q, k, v, out, lse, *args, local_offset, softcap, sink):
    dq, dk, dv, dsink = torch.ops.fa3lite.bwd(dout, q, k, v, out, lse, *args, local_offset, softcap, sink)
    return dq, dk, dv, dsink if sink is not None else None


def _setup_context(ctx, inputs, output):
    q, k, v, softmax_scale, causal, causal_offset, deterministic, backend, local_offset, softcap, sink = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse, sink)
    ctx.call = Call(softmax_scale, causal, causal_offset, local_offset, softcap, deterministic, backend)
    ctx.mark_non_differentiable(lse)


_OP_SINK_INDEX = 10   # sink's position among fa3lite::fwd's arguments


def _backward(ctx, dout, dlse):
    return _grads(ctx, dout, _op_grads, _OP_SINK_INDEX)


fwd.register_autograd(_backward, setup_context=_setup_context)

FWD = torch.ops.fa3lite.fwd.default
BWD = torch.ops.fa3lite.bwd.default


class _EagerAttention(torch.autograd.Function):
    """Eager-mode twin of the custom op: same implementations, without the custom-op dispatch
    (~50 us a call on the GPU machine, more than the whole kernel launch path at small shapes).
    Arguments: the tensors autograd tracks (q, k, v, sink) and one Call; few arguments, because the
    C apply and the engine walk each one every call. ``call.plan``: the kernels' launch plan of this
    call signature (fa3lite.callkey), or None. ``call.bhsd``: q, k, v (and so out and the gradients)
    in torch's (B, H, S, D) order, as SDPA takes them, so that no view op of the caller's tensors
    lands in the autograd graph (a node each)."""

    SINK_INDEX = 3   # sink's position among forward's arguments after ctx

    @staticmethod
    def forward(ctx, q, k, v, sink, call):
        out, lse = _eager_forward(ctx, q, k, v, sink, call)
        ctx.mark_non_differentiable(lse)
        return out, lse

    @staticmethod
    def backward(ctx, dout, dlse):
        if dout is None:   # out took no part in what is differentiated
            return None, None, None, None, None
        grads = _planned_grads(ctx, dout)
        if grads is not None:
            return grads

        def kernels(*args, **mods):
            return _bwd_impl(*args, checked=ctx.call.checked, fwd_plan=ctx.call.plan, **mods)

        return _grads(ctx, dout, kernels, _EagerAttention.SINK_INDEX)


def _eager_forward(ctx, q, k, v, sink, call):
    """The eager nodes' forward: (out, lse) from the plan or the implementations, saved for the backward."""
    if call.plan is not None:
        out, lse = call.plan(q, k, v, kernel_sink(sink))
    elif call.bhsd:
        out, lse = _fwd_bhsd_impl(q, k, v, call.softmax_scale, call.causal, call.deterministic, call.backend,
                                  call.checked)
    else:
        out, lse = _fwd_impl(q, k, v, call.softmax_scale, call.causal, call.causal_offset, call.deterministic,
                             call.backend, call.checked, call.local_offset, call.softcap, sink)
    ctx.save_for_backward(q, k, v, out, lse, sink)
    ctx.call = call
    ctx.set_materialize_grads(False)   # lse has no gradient: no zero dLSE made for each backward
    return out, lse


class _EagerAttentionOut(_EagerAttention):
    """_EagerAttention for calls that do not return lse (most): out is the node's one output and lse
    is saved as an intermediate (it carries no gradient), so autograd wraps one output and marks
    none non-differentiable (~2 us a call on the GPU machine). Same backward."""

    @staticmethod
    def forward(ctx, q, k, v, sink, call):
        return _eager_forward(ctx, q, k, v, sink, call)[0]

    @staticmethod
    def backward(ctx, dout):
        return _EagerAttention.backward(ctx, dout, None)


def _c_apply(function):
    """``function.apply`` without torch.autograd.Function.apply's Python wrapper, which outside
    functorch transforms only unwraps dead functorch wrappers (~3 us a call) before calling this C
    entry; None where this torch has no such entry."""
    entry = getattr(torch._C, "_FunctionBase", None)
    entry = entry.__dict__.get("apply") if entry is not None else None
    return entry.__get__(None, function) if entry is not None else None


def _fast_apply(function):
    """``function.apply`` through its C entry where there is one and no functorch transform is active."""
    entry = _c_apply(function)

    def apply(*args):
        if entry is None or torch._C._are_functorch_transforms_active():
            return function.apply(*args)
        return entry(*args)

    return apply


_eager_apply = _fast_apply(_EagerAttention)
_eager_apply_out = _fast_apply(_EagerAttentionOut)


def autograd_needed(q, k, v, sink=None) -> bool:
    """Whether an eager call must record the autograd node: grad mode with an input requiring grad, or
    a forward-mode AD level open (dual tensors need the Function to refuse them)."""
    return ((torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad
                                          or (sink is not None and sink.requires_grad)))
            or getattr(torch.autograd.forward_ad, "_current_level", -1) >= 0)


def attention(q, k, v, softmax_scale: float, causal: bool, causal_offset: int, deterministic: bool,
              backend: str, checked: bool = False, bhsd: bool = False, local_offset: int | None = None,
              softcap: float = 0.0, sink=None):
    """(out, lse) for validated arguments: the custom op while torch.compile traces (one graph node,
    no break), the eager twin otherwise, or straight to the implementation when no autograd node is
    needed. All run _fwd_impl / _bwd_impl, so results are identical. ``checked``: the caller
    established kernels_take (fa3lite.callkey), so the kernel limits are not read again (a call whose
    signature has a launch plan goes to planned_attention instead). ``bhsd``: q, k, v and out in torch's (B, H, S, D) order, the mask top-left (causal_offset 0), no
    window, softcap or sink; eager calls only (the SDPA entry takes the flash_attn layout while
    torch.compile traces)."""
    if torch.compiler.is_compiling():
        return FWD(q, k, v, softmax_scale, causal, causal_offset, deterministic, backend, local_offset, softcap, sink)
    if not autograd_needed(q, k, v, sink):
        if bhsd:
            return _fwd_bhsd_impl(q, k, v, softmax_scale, causal, deterministic, backend, checked)
        return _fwd_impl(q, k, v, softmax_scale, causal, causal_offset, deterministic, backend, checked,
                         local_offset, softcap, sink)
    return _eager_apply(q, k, v, sink, Call(softmax_scale, causal, causal_offset, local_offset, softcap,
                                            deterministic, backend, checked, None, bhsd))


def planned_attention(q, k, v, sink, plan, deterministic: bool, backend: str, need_lse: bool = True):
    """attention() of eager inputs that need an autograd node, for a call signature whose launch plan
    ``plan`` (fa3lite.callkey) holds the mask and scale it was made for (plan.attention). Without
    ``need_lse``: (out, None), from the node with out as its only output."""
    call = plan.calls.get((deterministic, backend))
    if call is None:
        call = plan.calls[(deterministic, backend)] = Call(*plan.attention, deterministic, backend, True, plan,
                                                           plan.bhsd)
    if need_lse:
        return _eager_apply(q, k, v, sink, call)
    return _eager_apply_out(q, k, v, sink, call), None


# ------------------------------------------------------------------ packed variable-length sequences
# varlen_fwd(q (total_q, Hq, D), k, v (total_k, Hk, D), cu_seqlens_q, cu_seqlens_k (B + 1,) int32,
#            seqused_q, seqused_k (B,) int32 or None, max_seqlen_q, max_seqlen_k, softmax_scale, causal,
#            causal_offset, local_offset, softcap, sink, deterministic, backend)
#     -> (out (total_q, Hq, D), lse (Hq, total_q) fp32)
# varlen_bwd(dout, out, lse and the forward's arguments) -> (dq, dk, dv, dsink); dsink (0,) without a sink
# The mask's offsets are relative to each sequence's bottom-right diagonal (fa3lite/hopper/varlen.py).
# Both run on the Hopper kernels where they take the inputs, else on the torch math one sequence at a
# time (fa3lite.fallback), with the same FallbackWarning / InputError rules as the fixed-length ops.


def _varlen_module(q, k, v, softmax_scale, backend, entry, softcap):
    """fa3lite.hopper when its varlen ``entry`` can run these (total, H, D) inputs, else None: the
    kernels' limits are those of a (1, total, H, D) batch."""
    return _kernel_module(*(t.unsqueeze(0) for t in (q, k, v)), softmax_scale, backend, entry, softcap, varlen=True)


def _varlen_fwd_impl(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q, max_seqlen_k,
                     softmax_scale, causal, causal_offset, local_offset, softcap, sink, backend, num_splits,
                     pack_group=1):
    module = _varlen_module(q, k, v, softmax_scale, backend, "forward_varlen", softcap)
    if module is not None:
        result = _on_kernels(backend, lambda: module.forward_varlen(
            q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, softmax_scale, causal, causal_offset, local_offset,
            softcap, kernel_sink(sink), seqused_q, seqused_k, max_seqlen_k, num_splits, pack_group))
        if result is not None:
            return result
    out, lse = fallback.forward_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, softmax_scale, causal, causal_offset,
                                       local_offset, softcap, sink, seqused_q, seqused_k, pack_group)
    return out.contiguous(), lse.contiguous()


def _varlen_bwd_impl(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q,
                     max_seqlen_k, softmax_scale, causal, causal_offset, local_offset, softcap, sink, deterministic,
                     backend):
    """(dq, dk, dv, dsink or None)."""
    module = _varlen_module(q, k, v, softmax_scale, backend, "backward_varlen", softcap)
    result = None
    if module is not None:
        result = _on_kernels(backend, lambda: module.backward_varlen(
            dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, softmax_scale, causal,
            causal_offset, local_offset, softcap, kernel_sink(sink), seqused_q, seqused_k, deterministic))
    if result is None:
        result = fallback.backward_varlen(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, softmax_scale, causal,
                                          causal_offset, local_offset, softcap, sink, seqused_q, seqused_k)
    if sink is None:
        return tuple(result) + (None,)
    dq, dk, dv, dsink = result
    return dq, dk, dv, dsink.to(sink.dtype)


@torch.library.custom_op(f"{_NAMESPACE}::varlen_fwd", mutates_args=())
def varlen_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens_q: torch.Tensor,
               cu_seqlens_k: torch.Tensor, seqused_q: torch.Tensor | None, seqused_k: torch.Tensor | None,
               max_seqlen_q: int, max_seqlen_k: int, softmax_scale: float, causal: bool, causal_offset: int,
               local_offset: int | None, softcap: float, sink: torch.Tensor | None, deterministic: bool,
               backend: str, num_splits: int = -1, pack_group: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    checks.raise_if_any(checks.varlen_op_problems(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                                  seqused_q, seqused_k, softcap, sink, backend), "fa3lite::varlen_fwd")
    return _varlen_fwd_impl(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q, max_seqlen_k,
                            softmax_scale, causal, causal_offset, local_offset, softcap, sink, backend, num_splits,
                            pack_group)


@varlen_fwd.register_fake
def _varlen_fwd_fake(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q, max_seqlen_k,
                     softmax_scale, causal, causal_offset, local_offset, softcap, sink, deterministic, backend,
                     num_splits=-1, pack_group=1):
    return q.new_empty((*q.shape[:2], v.shape[2])), q.new_empty((q.shape[1], q.shape[0]), dtype=torch.float32)


@torch.library.custom_op(f"{_NAMESPACE}::varlen_bwd", mutates_args=())
def varlen_bwd(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
               lse: torch.Tensor, cu_seqlens_q: torch.Tensor, cu_seqlens_k: torch.Tensor,
               seqused_q: torch.Tensor | None, seqused_k: torch.Tensor | None, max_seqlen_q: int, max_seqlen_k: int,
               softmax_scale: float, causal: bool, causal_offset: int, local_offset: int | None, softcap: float,
               sink: torch.Tensor | None, deterministic: bool, backend: str
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    checks.raise_if_any(checks.varlen_op_problems(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                                  seqused_q, seqused_k, softcap, sink, backend), "fa3lite::varlen_bwd")
    grads = _varlen_bwd_impl(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q,
                             max_seqlen_k, softmax_scale, causal, causal_offset, local_offset, softcap, sink,
                             deterministic, backend)
    return tuple(q.new_empty((0,)) if g is None else g.contiguous() for g in grads)


@varlen_bwd.register_fake
def _varlen_bwd_fake(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q,
                     max_seqlen_k, softmax_scale, causal, causal_offset, local_offset, softcap, sink, deterministic,
                     backend):
    return (q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape),
            sink.new_empty(sink.shape) if sink is not None else q.new_empty((0,)))


_VARLEN_SINK_INDEX = 14   # sink's position among varlen_fwd's arguments (and _EagerVarlen's)


def _varlen_save(ctx, inputs, out, lse):
    """What the backward needs of varlen_fwd's first 17 arguments (`inputs`) and its outputs."""
    q, k, v, cu_q, cu_k, used_q, used_k, max_q, max_k = inputs[:9]
    scale, causal, causal_offset, local_offset, softcap, sink, deterministic, backend = inputs[9:17]
    ctx.save_for_backward(q, k, v, out, lse, cu_q, cu_k, used_q, used_k, sink)
    ctx.args = (max_q, max_k, scale, causal, causal_offset, local_offset, softcap)
    ctx.flags = (deterministic, backend)
    ctx.mark_non_differentiable(lse)


def _varlen_input_grads(ctx, dq, dk, dv, dsink):
    """One gradient per input of the call: dq, dk, dv first, dsink at the sink's position if asked."""
    grads = [None] * len(ctx.needs_input_grad)
    grads[:3] = dq, dk, dv
    if dsink is not None and ctx.needs_input_grad[_VARLEN_SINK_INDEX]:
        grads[_VARLEN_SINK_INDEX] = dsink
    return tuple(grads)


def _varlen_setup_context(ctx, inputs, output):
    if len(inputs) > 18 and inputs[18] != 1:
        raise NotImplementedError("fa3lite::varlen_fwd: packed GQA (pack_group > 1) is inference only")
    _varlen_save(ctx, inputs, *output)


def _varlen_backward(ctx, dout, dlse):
    q, k, v, out, lse, cu_q, cu_k, used_q, used_k, sink = ctx.saved_tensors
    dq, dk, dv, dsink = torch.ops.fa3lite.varlen_bwd(dout, q, k, v, out, lse, cu_q, cu_k, used_q, used_k, *ctx.args,
                                                     sink, *ctx.flags)
    return _varlen_input_grads(ctx, dq, dk, dv, dsink if sink is not None else None)


varlen_fwd.register_autograd(_varlen_backward, setup_context=_varlen_setup_context)


class _EagerVarlen(torch.autograd.Function):
    """Eager-mode twin of fa3lite::varlen_fwd with its autograd (as _EagerAttention is fwd's): the
    same implementations without the custom-op dispatch, which cost ~250 us a call on the GPU
    machine (host time 330-375 us a call against 100-160 without grad), enough to make the varlen
    forward host-bound at 16k tokens. Arguments: varlen_fwd's, dense kernels only (no splits, no
    packed GQA: inference only)."""

    @staticmethod
    def forward(ctx, q, k, v, cu_q, cu_k, used_q, used_k, max_q, max_k, softmax_scale, causal, causal_offset,
                local_offset, softcap, sink, deterministic, backend):
        inputs = (q, k, v, cu_q, cu_k, used_q, used_k, max_q, max_k, softmax_scale, causal, causal_offset,
                  local_offset, softcap, sink, deterministic, backend)
        out, lse = _varlen_fwd_impl(*inputs[:15], backend, -1)
        _varlen_save(ctx, inputs, out, lse)
        return out, lse

    @staticmethod
    def backward(ctx, dout, dlse):
        q, k, v, out, lse, cu_q, cu_k, used_q, used_k, sink = ctx.saved_tensors
        max_q, max_k, scale, causal, causal_offset, local_offset, softcap = ctx.args
        if _needs_graph(dout, q, k, v, sink):   # create_graph: the torch math, whose gradients carry one
            grads = fallback.backward_varlen(dout, q, k, v, out, lse, cu_q, cu_k, scale, causal, causal_offset,
                                             local_offset, softcap, sink, used_q, used_k)
            dq, dk, dv, dsink = grads if sink is not None else tuple(grads) + (None,)
        else:
            dq, dk, dv, dsink = _varlen_bwd_impl(dout, q, k, v, out, lse, cu_q, cu_k, used_q, used_k, *ctx.args,
                                                 sink, *ctx.flags)
        return _varlen_input_grads(ctx, dq, dk, dv, dsink)


_eager_varlen_apply = _fast_apply(_EagerVarlen)


def varlen_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q: int,
                     max_seqlen_k: int, softmax_scale: float, causal: bool, causal_offset: int,
                     local_offset: int | None, softcap: float, sink, deterministic: bool, backend: str,
                     num_splits: int = -1, pack_group: int = 1):
    """(out, lse) of validated varlen arguments: straight to the implementation when no autograd node
    is needed, through the eager twin when one is (_EagerVarlen), through the custom op while
    torch.compile traces (and for the inference-only layouts, whose op refuses a backward).
    num_splits: -1 the dense varlen kernels; >= 0 the split-KV decode kernel (hopper/varlen.py).
    pack_group: rows per query position (packed GQA, inference only; fallback.forward_varlen)."""
    if not torch.compiler.is_compiling():
        if not autograd_needed(q, k, v, sink):
            return _varlen_fwd_impl(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q,
                                    max_seqlen_k, softmax_scale, causal, causal_offset, local_offset, softcap, sink,
                                    backend, num_splits, pack_group)
        if num_splits == -1 and pack_group == 1:
            return _eager_varlen_apply(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q,
                                      max_seqlen_k, softmax_scale, causal, causal_offset, local_offset, softcap, sink,
                                      deterministic, backend)
    return torch.ops.fa3lite.varlen_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q,
                                        max_seqlen_k, softmax_scale, causal, causal_offset, local_offset, softcap,
                                        sink, deterministic, backend, num_splits, pack_group)
