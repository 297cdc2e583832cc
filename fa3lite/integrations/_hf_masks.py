"""The attention mask the "fa3lite" backend asks transformers to build (its AttentionMaskInterface entry).

Without an entry of its own transformers builds no mask at all for a custom attention function
(masking_utils._preprocess_mask_arguments returns None for names without a mask function), and a
padded batch would silently attend to its padding. ``fa3lite_mask`` returns, for each mask a model
builds:

* None for a plain causal pattern (full, or a sliding window: fa3lite applies the attention call's
  own sliding_window, as transformers' FlashAttention path does) without padding whose last query
  sits on the last key slot: fa3lite's bottom-right causal mask is then the model's.
* a 2-D (B, n) boolean key mask (True = a token) for the same pattern with padding, or with key slots
  past the last query (a static cache's empty tail): n counts the slots up to the last query, which
  are all a causal query can see. The attention function drops the later slots (as transformers does
  for FlashAttention) and unpads the rest into a varlen batch.
* transformers' own SDPA mask, 4-D (B, 1, Sq, Sk) boolean or None, for everything else: bidirectional
  masks, or/and overlays (image tokens, ...), packed sequences, blockwise ids, chunked attention, and
  masks built while torch.compile traces. The attention function runs such a mask on the kernels only
  if a varlen layout reproduces it exactly, else in torch.

transformers marks a plain causal pattern by allowing the "is_causal skip" (allow_is_causal_skip): it
clears the flag for every overlay, packed sequences and blockwise ids, and bidirectional masks never
set it. Chunked attention (Llama 4) keeps it, so a local_size equal to config.attention_chunk_size
counts as not plain. The query span comes as q_length / q_offset (transformers 5.x) or as
cache_position (4.56 on).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def fa3lite_mask(batch_size, kv_length, kv_offset=0, attention_mask=None, allow_is_causal_skip=False, **kwargs):
    """transformers' mask-interface call (keywords only): None, a 2-D (B, n) boolean key mask, or
    transformers' 4-D SDPA mask (see the module docstring). ``attention_mask`` is the model's 2-D
    padding mask (B, seen tokens) or None."""
    span = _query_span(kwargs)
    if span is not None and allow_is_causal_skip and not _chunked(kwargs):
        q_length, q_offset = span
        return _key_slots(attention_mask, batch_size, kv_length, kv_offset, q_length, q_offset, _device(kwargs))
    from transformers.masking_utils import sdpa_mask

    return sdpa_mask(batch_size=batch_size, kv_length=kv_length, kv_offset=kv_offset, attention_mask=attention_mask,
                     allow_is_causal_skip=False, **kwargs)


def _query_span(kwargs) -> tuple[int, int] | None:
    """(q_length, q_offset) of the queries, or None where reading them would need a traced value."""
    if "q_length" in kwargs:
        q_length, q_offset = kwargs["q_length"], kwargs.get("q_offset", 0)
    else:
        cache_position = kwargs.get("cache_position")
        if cache_position is None:
            return None
        q_length = cache_position.shape[0]
        q_offset = cache_position[0] if q_length else 0
    if isinstance(q_offset, torch.Tensor):
        if torch.compiler.is_compiling():
            return None
        q_offset = int(q_offset)    # a static cache's offset lives in a tensor: one sync per mask
    return int(q_length), q_offset


def _chunked(kwargs) -> bool:
    """Whether transformers is building a chunked-attention mask (its local_size is the chunk size)."""
    chunk = getattr(kwargs.get("config"), "attention_chunk_size", None)
    return chunk is not None and kwargs.get("local_size") == chunk


def _device(kwargs):
    cache_position = kwargs.get("cache_position")
    return kwargs.get("device", cache_position.device if cache_position is not None else None)


def _key_slots(padding, batch_size, kv_length, kv_offset, q_length, q_offset, device):
    """None or the (B, n) boolean key mask of a plain causal pattern: n = key slots up to the last
    query's position, True where the model's 2-D ``padding`` (absolute positions) has a token."""
    # A causal query never sees a slot past its own position; past the last query's, a static cache's
    # slots are still empty.
    filled = max(0, min(kv_length, q_offset + q_length - kv_offset))
    if padding is None:
        if filled == kv_length:
            return None
        return torch.ones(batch_size, filled, dtype=torch.bool, device=device)
    keys = padding[:, kv_offset:kv_offset + filled].to(dtype=torch.bool)
    if keys.shape[1] < filled:
        # Positions the 2-D mask does not reach hold no token, as in transformers' own masks.
        keys = F.pad(keys, (0, filled - keys.shape[1]), value=False)
    if filled == kv_length and bool(keys.all()):
        return None
    return keys
