"""Signatures of calls that passed every check and run on the kernels, so that repeating one skips
the checks.

The checks of an attention call (checks.attention_problems, scale/flag/backend problems,
sdpa_unsupported/sdpa_problems, kernel_reasons, fallback.is_empty) read nothing but: the type of
each argument, each tensor's shape, strides, dtype and device and whether its address is 16-byte
aligned, the scale and the flags. A key holds exactly those, so two calls with equal keys get the
same verdicts. Only exact types make a key (torch.Tensor itself, float or None scales, bool flags,
str backends): True == 1 and 1.0 == 1 hash alike, so a looser key could let an int flag or a Tensor
subclass reuse a verdict that was never given for it. Anything else (and anything while
torch.compile traces) takes the full checks every time.

    flash_key(q, k, v, softmax_scale, causal, deterministic, return_lse, backend, window_size, softcap,
              learnable_sink) -> key or None
    sdpa_key(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, backend) -> key or None
    op_key(name, tensors, scalars) -> key or None   (the custom ops, called directly or from compiled code)
    kvcache_key(q, k_cache, v_cache, k, v, rotary_cos, rotary_sin, cache_seqlens, cache_batch_idx,
                cache_leftpad, page_table, softmax_scale, causal, window_size, softcap, rotary_interleaved,
                num_splits, pack_gqa, return_softmax_lse, backend) -> key or None
    passed(key) -> bool;  remember(key)
    plan(key) -> the kernels' launch plan attached to a remembered key, or None;  attach(key, plan)
    find(key) -> MISSING for a key never remembered, else its plan or None (one lookup for both)

A key also carries FA3LITE_DEBUG (it selects other kernels), so an attached plan always matches the
build the environment asks for.
"""
from __future__ import annotations

import os

import torch

_LIMIT = 4096            # keys kept; past it the table starts over (a miss only costs the full checks)
_passed: dict[tuple, object] = {}   # key -> launch plan (None until one is attached)
_Tensor = torch.Tensor
_SCALES = (float, type(None))
_SOFTCAPS = (float, int)


def _tensor(t) -> tuple:
    """What the checks read of one tensor (raises for tensors without storage, e.g. under vmap)."""
    if type(t) is not _Tensor:
        raise TypeError
    return t.shape, t.stride(), t.dtype, t.device, t.data_ptr() % 16 == 0


def flash_key(q, k, v, softmax_scale, causal, deterministic, return_lse, backend, window_size=(-1, -1),
              softcap=0.0, learnable_sink=None):
    """Key of a flash_attn_func call, or None when it cannot have one (window_size must be a tuple of
    two ints, softcap an int or float, learnable_sink None or a torch.Tensor)."""
    # spelled out, without all() and generators: this runs on every call (generators cost ~1 us)
    if not (type(causal) is bool and type(deterministic) is bool and type(return_lse) is bool
            and type(softmax_scale) in _SCALES and type(backend) is str and type(softcap) in _SOFTCAPS
            and type(window_size) is tuple and len(window_size) == 2 and type(window_size[0]) is int
            and type(window_size[1]) is int and not torch.compiler.is_compiling()):
        return None
    try:
        sink = None if learnable_sink is None else _tensor(learnable_sink)
        return ("flash", _tensor(q), _tensor(k), _tensor(v), softmax_scale, causal, deterministic,
                return_lse, backend, window_size, softcap, sink, os.environ.get("FA3LITE_DEBUG"))
    except (TypeError, RuntimeError):
        return None


def sdpa_key(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, backend):
    """Key of a scaled_dot_product_attention call, or None (any mask, dropout or loose type)."""
    if not (attn_mask is None and type(dropout_p) is float and dropout_p == 0.0 and type(is_causal) is bool
            and type(enable_gqa) is bool and type(scale) in _SCALES and type(backend) is str
            and not torch.compiler.is_compiling()):   # spelled out: runs on every call (as in flash_key)
        return None
    try:
        return ("sdpa", _tensor(query), _tensor(key), _tensor(value), is_causal, scale, enable_gqa, backend,
                os.environ.get("FA3LITE_DEBUG"))
    except (TypeError, RuntimeError):
        return None


def op_key(name: str, tensors, scalars):
    """Key of a custom-op call (fa3lite::fwd / fa3lite::bwd): its tensors and its scalars with their
    types (the dispatcher fixed the types by the schema; keeping them apart anyway costs nothing)."""
    if torch.compiler.is_compiling():
        return None
    try:
        return (name, tuple(_tensor(t) for t in tensors), tuple((type(x), x) for x in scalars))
    except (TypeError, RuntimeError):
        return None


def _optional(t) -> tuple | None:
    return None if t is None else _tensor(t)


def kvcache_key(q, k_cache, v_cache, k, v, rotary_cos, rotary_sin, cache_seqlens, cache_batch_idx, cache_leftpad,
                page_table, softmax_scale, causal, window_size, softcap, rotary_interleaved, num_splits, pack_gqa,
                return_softmax_lse, backend):
    """Key of a flash_attn_with_kvcache call, or None. Its checks (kvcache._problems and the shared
    scale/flag/window/softcap/backend checks) read each tensor's metadata, cache_seqlens' value when it
    is an int, num_splits' value and pack_gqa's: all in the key, with their exact types."""
    # spelled out (as in flash_key): a decode step runs this on every call
    if not (type(causal) is bool and type(rotary_interleaved) is bool and type(return_softmax_lse) is bool
            and type(softmax_scale) in _SCALES and type(backend) is str and type(window_size) is tuple
            and len(window_size) == 2 and type(window_size[0]) is int and type(window_size[1]) is int
            and type(softcap) in _SOFTCAPS and type(num_splits) is int and (pack_gqa is None or type(pack_gqa) is bool)
            and not torch.compiler.is_compiling()):
        return None
    try:
        if cache_seqlens is None or type(cache_seqlens) is int:
            seqlens = (type(cache_seqlens), cache_seqlens)
        else:
            seqlens = _tensor(cache_seqlens)
        tensors = (_tensor(q), _tensor(k_cache), _tensor(v_cache), _optional(k), _optional(v), _optional(rotary_cos),
                   _optional(rotary_sin), _optional(cache_batch_idx), _optional(cache_leftpad), _optional(page_table))
        return ("kvcache", tensors, seqlens, softmax_scale, causal, window_size, (type(softcap), softcap),
                rotary_interleaved, num_splits, pack_gqa, return_softmax_lse, backend, os.environ.get("FA3LITE_DEBUG"))
    except (TypeError, RuntimeError):
        return None


def passed(key) -> bool:
    return key is not None and key in _passed


def remember(key) -> None:
    if key is None:
        return
    if len(_passed) >= _LIMIT:
        _passed.clear()
    _passed.setdefault(key, None)


def plan(key):
    return _passed.get(key) if key is not None else None


MISSING = object()


def find(key):
    """MISSING when ``key`` was never remembered (or is None), else the plan attached to it or None:
    passed() and plan() in one lookup, for the hot path."""
    return _passed.get(key, MISSING) if key is not None else MISSING


def attach(key, launch_plan) -> None:
    """Attach the launch plan the kernels built for a remembered key (a call with that key and no
    autograd then goes straight to it)."""
    if key in _passed:
        _passed[key] = launch_plan


def forget() -> None:
    """Forget every key (for tests)."""
    _passed.clear()
