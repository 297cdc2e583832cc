"""Public attention functions: flash_attn_func (flash_attn layout) and scaled_dot_product_attention
(a drop-in for torch.nn.functional.scaled_dot_product_attention).

Both validate their arguments (checks), then call the custom op fa3lite::fwd (ops), which runs the
Hopper kernels when they can take the inputs and the torch fallback otherwise.

backend:
  "auto"    the Hopper kernels where they can take the inputs, else the fallback, with a
            FallbackWarning once per process per set of reasons;
  "fa3lite" the Hopper kernels or an InputError listing every reason they cannot run;
  "torch"   never the Hopper kernels (flash_attn_func: fa3lite.fallback; scaled_dot_product_attention:
            torch.nn.functional.scaled_dot_product_attention).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from . import callkey, checks, ops


def flash_attn_func(q, k, v, softmax_scale=None, causal=False, deterministic=False, return_lse=False,
                    backend="auto", *, window_size=(-1, -1), softcap=0.0, learnable_sink=None):
    """Multi-head attention in the flash_attn layout.

    Args:
        q: (B, Sq, Hq, D) query; k, v: (B, Sk, Hk, D) key and value, Hq a multiple of Hk (GQA/MQA:
            query head h reads key/value head h // (Hq // Hk)). One dtype (float16/bfloat16 for the
            kernels; float32/float64 are served by the fallback) and one device. Any strides; the
            kernels want the last dim contiguous and 16-byte aligned addresses and strides.
        softmax_scale: scale of q @ k^T before the softmax; default D ** -0.5.
        causal: mask aligned to the bottom-right as in FlashAttention: key j is visible to query i
            iff j <= i + (Sk - Sq). With Sq > Sk the first Sq - Sk rows see no key.
        deterministic: deterministic backward (no atomics in the dQ accumulation).
        return_lse: also return the log-sum-exp of the scaled scores.
        backend: "auto", "fa3lite" or "torch" (see the module docstring).
        window_size: (left, right), sliding-window (local) attention as in FlashAttention: query i
            sees key j iff i + Sk - Sq - left <= j <= i + Sk - Sq + right, -1 = unbounded on that
            side; causal=True sets right to 0. (-1, -1): no window.
        softcap: > 0 caps the scores as in Gemma 2: s = softcap * tanh(softmax_scale * q.k / softcap)
            before the softmax; 0 = off.
        learnable_sink: None or a (Hq,) floating-point tensor, one sink logit per query head (as in
            gpt-oss): every row's softmax denominator gains exp(sink[h]), which carries no value. It
            gets a gradient when it requires one.

    Returns:
        out (B, Sq, Hq, D) contiguous in q's dtype, or (out, lse) with lse (B, Hq, Sq) float32, natural
        log (with a sink, the sink's term included). Rows with no visible key (also Sk == 0) give
        out = 0 and lse = -inf (the sink's logit with a sink). lse carries no gradient. Empty inputs
        (B, Sq or H = 0) give empty outputs.

    Raises:
        fa3lite.InputError (a ValueError and a TypeError) listing every invalid argument.
    """
    key = callkey.flash_key(q, k, v, softmax_scale, causal, deterministic, return_lse, backend, window_size,
                            softcap, learnable_sink)
    found = callkey.find(key)
    checked = found is not callkey.MISSING
    plan = found if checked else None
    if plan is not None:   # a repeat of a call that ran on the kernels: its launch, with autograd's node if needed
        if ops.autograd_needed(q, k, v, learnable_sink):
            out, lse = ops.planned_attention(q, k, v, learnable_sink, plan, deterministic, backend, return_lse)
            return (out, lse) if return_lse else out
        if return_lse:
            return plan(q, k, v, ops.kernel_sink(learnable_sink))
        return plan.out(q, k, v, ops.kernel_sink(learnable_sink))   # no lse made: nothing keeps it
    if not checked:
        problems = checks.attention_problems(q, k, v)
        problems += checks.scale_problems("softmax_scale", softmax_scale)
        problems += checks.flag_problems(causal=causal, deterministic=deterministic, return_lse=return_lse)
        problems += checks.backend_problems(backend)
        problems += checks.window_problems(window_size) + checks.softcap_problems(softcap)
        problems += checks.sink_problems(learnable_sink, q)
        checks.raise_if_any(problems, "flash_attn_func")
    scale = q.shape[3] ** -0.5 if softmax_scale is None else float(softmax_scale)
    softcap = float(softcap)
    if not checked:
        checked = ops.remember_if_kernels_take(key, q, k, v, scale, backend, softcap)
    band, causal_offset, local_offset = window_mask(q.shape[1], k.shape[1], causal, window_size)
    out, lse = ops.attention(q, k, v, scale, band, causal_offset, deterministic, backend, checked,
                             local_offset=local_offset, softcap=softcap, sink=learnable_sink)
    if checked:    # attach the launch plan the call made (none: the call made no launch)
        callkey.attach(key, ops.forward_plan(q, k, v, scale, band, causal_offset, local_offset=local_offset,
                                             softcap=softcap, sink=learnable_sink))
    return (out, lse) if return_lse else out


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_q=None,
                           seqused_k=None, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                           learnable_sink=None, deterministic=False, return_lse=False, backend="auto"):
    """Attention over a batch of sequences packed without padding (flash_attn's varlen layout).

    Args:
        q: (total_q, Hq, D); k, v: (total_k, Hk, D); sequence b owns rows cu_seqlens_q[b] to
            cu_seqlens_q[b + 1] of q (cu_seqlens_k of k and v). Hq a multiple of Hk; one dtype and
            device as in flash_attn_func.
        cu_seqlens_q, cu_seqlens_k: int32 (B + 1,) cumulative offsets, starting at 0, non-decreasing.
        max_seqlen_q, max_seqlen_k: ints >= the longest sequence's length (they size the grid; they
            are not checked against the offsets, which live on the GPU).
        seqused_q, seqused_k: None or int32 (B,): sequence b uses only the first seqused[b] rows it owns.
        softmax_scale, causal, window_size, softcap, learnable_sink, deterministic, return_lse, backend:
            as in flash_attn_func, per sequence (causal and windows aligned to each sequence's
            bottom-right corner). Sequences of length 0 and 1 are allowed.

    Returns:
        out (total_q, Hq, D) in q's dtype (zero in rows no sequence uses), or (out, lse) with lse
        (Hq, total_q) float32, natural log (-inf in unused rows and in rows that see no key without a
        sink). Gradients are zero in unused rows.

    Raises:
        fa3lite.InputError listing every invalid argument.
    """
    problems = checks.varlen_problems(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                      seqused_q, seqused_k)
    problems += checks.scale_problems("softmax_scale", softmax_scale)
    problems += checks.flag_problems(causal=causal, deterministic=deterministic, return_lse=return_lse)
    problems += checks.backend_problems(backend)
    problems += checks.window_problems(window_size) + checks.softcap_problems(softcap)
    if isinstance(q, torch.Tensor) and q.dim() == 3:
        problems += checks.sink_problems(learnable_sink, q.unsqueeze(0))
    checks.raise_if_any(problems, "flash_attn_varlen_func")
    scale = q.shape[2] ** -0.5 if softmax_scale is None else float(softmax_scale)
    band, causal_offset, local_offset = window_mask(0, 0, causal, window_size)    # relative to each diagonal
    out, lse = ops.varlen_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, int(max_seqlen_q),
                                    int(max_seqlen_k), scale, band, causal_offset, local_offset, float(softcap),
                                    learnable_sink, deterministic, backend)
    return (out, lse) if return_lse else out


def window_mask(seqlen_q: int, seqlen_k: int, causal: bool, window_size) -> tuple[bool, int, int | None]:
    """flash_attn's (causal, window_size) as the ops take the mask: (causal, causal_offset,
    local_offset), key j visible to query i iff (not causal or j <= i + causal_offset) and
    (local_offset is None or j >= i + local_offset); both edges relative to the bottom-right
    diagonal j = i + Sk - Sq."""
    left, right = window_size
    diagonal = seqlen_k - seqlen_q
    if causal:
        right = 0
    upper = right >= 0
    return upper, diagonal + right if upper else 0, diagonal - left if left >= 0 else None


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False, backend="auto"):
    """Drop-in for torch.nn.functional.scaled_dot_product_attention, same arguments and results.

    Args:
        query: (B, Hq, Sq, D); key, value: (B, Hk, Sk, D); Hk == Hq, or Hq a multiple of Hk with
            enable_gqa=True. 3-D (B, S, D) inputs are taken as one head.
        attn_mask, dropout_p: as in torch; any mask or dropout_p != 0 goes to torch's implementation.
        is_causal: torch's top-left aligned mask: key j is visible to query i iff j <= i.
        scale: default D ** -0.5.
        enable_gqa: as in torch: without it, Hq != Hk is torch's error.
        backend: "auto", "fa3lite" or "torch" (see the module docstring).

    Returns:
        (B, Hq, Sq, D) (or (B, Sq, D)) in query's dtype. On the fa3lite path it is a transposed view of
        a contiguous (B, Sq, Hq, D) tensor, and the inputs reach the kernels as views, not copies.

    Calls fa3lite cannot serve exactly -- attn_mask, dropout_p != 0, dtypes other than float16/bfloat16,
    value's head dim != query's, other ranks, arguments torch would reject -- are passed unchanged to
    torch.nn.functional.scaled_dot_product_attention (with backend "auto"; a FallbackWarning names the
    reasons once), so results and errors are torch's.
    """
    call = callkey.sdpa_key(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, backend)
    found = callkey.find(call)
    if found is not callkey.MISSING:
        if found is not None:   # a repeat of a call that ran on the kernels (4-D: only those get a plan)
            if ops.autograd_needed(query, key, value):
                deterministic = torch.are_deterministic_algorithms_enabled()
                return ops.planned_attention(query, key, value, None, found, deterministic, backend, False)[0]
            return found.out(query, key, value)
        out = _fa3lite_sdpa(query, key, value, is_causal, scale, backend, True)
        if query.dim() == 4:   # attach the launch plan the call made (3-D calls go through views, no plan)
            softmax_scale = query.shape[3] ** -0.5 if scale is None else float(scale)
            callkey.attach(call, ops.forward_plan(query, key, value, softmax_scale, is_causal, 0, bhsd=True))
        return out
    checks.raise_if_any(checks.backend_problems(backend), "scaled_dot_product_attention")
    if backend != "torch":
        reasons = checks.sdpa_unsupported(query, key, value, attn_mask, dropout_p, enable_gqa)
        if not reasons:
            q4, k4, v4 = (t.unsqueeze(1) if t.dim() == 3 else t for t in (query, key, value))
            reasons = checks.sdpa_problems(q4, k4, v4, dropout_p, is_causal, scale, enable_gqa)
            if not reasons:
                softmax_scale = q4.shape[3] ** -0.5 if scale is None else float(scale)
                checked = ops.remember_if_kernels_take(call, *(t.transpose(1, 2) for t in (q4, k4, v4)),
                                                       softmax_scale, backend)
                return _fa3lite_sdpa(query, key, value, is_causal, scale, backend, checked)
        if backend == "fa3lite":
            checks.raise_if_any(reasons + _kernel_reasons_if_known(query, key, value),
                                "scaled_dot_product_attention with backend='fa3lite'")
    else:
        reasons = []
    out = F.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
                                         is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
    # Warn only once torch accepted the call (its own errors speak for themselves), and not while
    # torch.compile traces: dynamo cannot trace warnings.warn.
    if reasons and not torch.compiler.is_compiling():
        checks.warn_fallback_once(reasons, "torch.nn.functional.scaled_dot_product_attention")
    return out


def _fa3lite_sdpa(query, key, value, is_causal, scale, backend, checked):
    """Validated (B, H, S, D) or (B, S, D) tensors through fa3lite's forward: 4-D ones as they are
    (torch's layout straight into the autograd node: no view op of the inputs or of out lands in the
    graph, each would be a node of its own in the backward), 3-D ones and anything while
    torch.compile traces as (B, S, H, D) views. Returns a (B, H, Sq, D) view (or (B, Sq, D))."""
    three_d = query.dim() == 3
    softmax_scale = query.shape[-1] ** -0.5 if scale is None else float(scale)
    # torch's is_causal is top-left aligned: causal_offset 0 whatever Sq and Sk.
    deterministic = torch.are_deterministic_algorithms_enabled()
    if not three_d and not torch.compiler.is_compiling():
        return ops.attention(query, key, value, softmax_scale, is_causal, 0, deterministic, backend, checked,
                             bhsd=True)[0]
    q, k, v = (t.unsqueeze(2) if three_d else t.transpose(1, 2) for t in (query, key, value))
    out, _ = ops.attention(q, k, v, softmax_scale, is_causal, 0, deterministic, backend, checked)
    return out.squeeze(2) if three_d else out.transpose(1, 2)


def _kernel_reasons_if_known(query, key, value) -> list[str]:
    """Kernel limits of valid 3-D/4-D inputs, so backend='fa3lite' errors list every reason. Skipped
    while torch.compile traces (addresses are unknown then; the op checks them at run time)."""
    if torch.compiler.is_compiling():
        return []
    views = [t.unsqueeze(1) if isinstance(t, torch.Tensor) and t.dim() == 3 else t
             for t in (query, key, value)]
    if checks.attention_problems(*views, layout="bhsd"):
        return []
    return checks.kernel_reasons(*(t.transpose(1, 2) for t in views))
