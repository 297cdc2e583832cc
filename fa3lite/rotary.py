"""Rotary position embedding (RoPE) of the rows that flash_attn_with_kvcache appends and of its queries.

Two layouts, as FlashAttention names them: interleaved (GPT-J: features 2i and 2i + 1 form a pair)
and not interleaved (GPT-NeoX: features i and i + rotary_dim / 2 form a pair). Pair i at position p
turns by the angle whose cosine and sine are cos[p, i] and sin[p, i]; features past rotary_dim are
left as they are. The rotation is done in float32 and rounded once to the input dtype.
"""
from __future__ import annotations

import torch


def rotary_dim(cos: torch.Tensor) -> int:
    """Features rotated by a (seqlen_ro, rotary_dim / 2) cos/sin table."""
    return 2 * cos.shape[1]


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, positions: torch.Tensor,
                 interleaved: bool) -> torch.Tensor:
    """x (B, S, H, D) rotated at positions (B, S) (int64, each < cos.shape[0]) -> a new (B, S, H, D)
    tensor in x.dtype. cos, sin: (seqlen_ro, rotary_dim / 2), rotary_dim <= D."""
    rd = rotary_dim(cos)
    c = cos.float()[positions].unsqueeze(2)    # (B, S, 1, rd / 2): one angle per pair, every head
    s = sin.float()[positions].unsqueeze(2)
    head = x[..., :rd].float()
    if interleaved:
        a, b = head[..., 0::2], head[..., 1::2]
        turned = torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)
    else:
        a, b = head[..., :rd // 2], head[..., rd // 2:]
        turned = torch.cat((a * c - b * s, a * s + b * c), dim=-1)
    return torch.cat((turned.to(x.dtype), x[..., rd:]), dim=-1)
