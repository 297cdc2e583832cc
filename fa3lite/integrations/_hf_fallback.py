"""The torch path of the transformers backend, for calls fa3lite cannot compute, and why.

Reasons are strings "argument: what fa3lite lacks, what came", one per problem. The torch path is
transformers' own sdpa_attention_forward; for softcap, sinks and position_bias together with them
(which SDPA cannot take) it is the math of the models' eager attention (Gemma 2's softcap, gpt-oss's
sinks), written once here. A FallbackWarning names the reasons, once per process per set of kinds of
reason (the text before the first ': ').
"""
from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F

from ..checks import FallbackWarning, _caller_stacklevel, reason_kind

WARNING_PREFIX = "fa3lite transformers backend"
_warned: set[tuple[str, frozenset[str]]] = set()


def reasons(options, kwargs: dict) -> list[str]:
    """What makes a call with these Options (_hf_options) and remaining transformers keywords a torch
    call, whatever its mask."""
    found = []
    if options.dropout > 0:
        found.append(f"dropout: fa3lite has no attention dropout, got p = {options.dropout}")
    if kwargs.get("cache") is not None:
        found.append(f"cache: transformers' paged KV cache (continuous batching) is not supported by the fa3lite "
                     f"backend, got {type(kwargs['cache']).__name__}")
    if kwargs.get("position_bias") is not None:
        found.append("position_bias: fa3lite adds no score bias, got a tensor")
    return found


def warn_once(found: list[str], instead: str) -> None:
    """FallbackWarning listing ``found`` and what runs ``instead``, once per set of reason kinds; it
    points at the first frame outside fa3lite and torch (the model's call of the attention interface)."""
    key = (instead, frozenset(reason_kind(r) for r in found))
    if key in _warned:
        return
    _warned.add(key)
    lines = "\n".join(f"  - {r}" for r in found)
    warnings.warn(f"{WARNING_PREFIX}: using {instead} for this call (shown once per kind of "
                  f"reason):\n{lines}", FallbackWarning, stacklevel=_caller_stacklevel())


def reset_warnings() -> None:
    """Forget which fallback warnings were shown (for tests)."""
    _warned.clear()


def attention(module, query, key, value, mask, causal: bool, options, found: list[str], kwargs: dict):
    """Attention in torch, for query (B, Hq, Sq, D), key / value (B, Hk, Sk, D) and ``mask`` None or a
    4-D boolean (True = attend) or additive mask; with no mask, ``causal`` means a causal mask whose
    alignment does not matter (Sq == Sk or Sq == 1). Returns (B, Sq, Hq, Dv) contiguous."""
    if options.softcap or options.sink is not None:
        warn_once(found, "the models' eager attention math in torch")
        return _eager(module, query, key, value, mask, causal, options, kwargs.get("position_bias"))
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    warn_once(found, "transformers' sdpa_attention_forward")
    out, _ = sdpa_attention_forward(module, query, key, value, mask, dropout=options.dropout,
                                    scaling=options.softmax_scale, is_causal=causal, **kwargs)
    return out


def _eager(module, query, key, value, mask, causal, options, position_bias):
    """softmax(softcap(q k^T * scale) + mask [+ position_bias], with sinks) v, as transformers' eager
    attention of Gemma 2 (softcap) and gpt-oss (sinks) computes it; dropout as theirs."""
    groups = query.shape[1] // key.shape[1]
    key = key.repeat_interleave(groups, dim=1)
    value = value.repeat_interleave(groups, dim=1)
    scale = query.shape[-1] ** -0.5 if options.softmax_scale is None else options.softmax_scale
    scores = torch.matmul(query, key.transpose(2, 3)) * scale
    if options.softcap:
        scores = torch.tanh(scores / options.softcap) * options.softcap
    if mask is None and causal:
        seqlen_q, seqlen_k = scores.shape[-2:]
        mask = torch.ones(seqlen_q, seqlen_k, dtype=torch.bool, device=scores.device).tril(seqlen_k - seqlen_q)
    if mask is not None:
        scores = scores + _additive(mask, scores.dtype)
    if position_bias is not None:
        scores = scores + position_bias
    if options.sink is not None:
        sinks = options.sink.to(scores.dtype).reshape(1, -1, 1, 1).expand(*scores.shape[:3], 1)
        logits = torch.cat([scores, sinks], dim=-1)
        # The sink column carries no value: it only enlarges each row's denominator.
        probs = F.softmax(logits, dim=-1, dtype=torch.float32)[..., :-1]
    else:
        probs = F.softmax(scores, dim=-1, dtype=torch.float32)
    probs = F.dropout(probs.to(query.dtype), p=options.dropout, training=module.training)
    return torch.matmul(probs, value).transpose(1, 2).contiguous()


def _additive(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A boolean mask (True = attend) as 0 / the dtype's minimum, as transformers' eager masks are; an
    additive mask as it is."""
    if mask.dtype != torch.bool:
        return mask.to(dtype)
    return torch.where(mask, 0.0, torch.finfo(dtype).min).to(dtype)
