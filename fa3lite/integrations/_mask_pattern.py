"""Attention masks as boolean patterns: what a 4-D mask allows, and the pattern fa3lite computes for a
varlen layout -- so that a mask is handed to the kernels only where the two agree.

A 4-D mask (B or 1, H or 1, Sq, Sk) comes boolean (True = attend) or additive (0 = attend, a large
negative number = masked; transformers' eager masks use the dtype's minimum). ``allowed`` reads it
as booleans and flags additive values that are neither (a bias, which only torch can add).

``expected`` is what fa3lite computes for a varlen layout (_varlen_layout.Counted): query row i sees
key column j iff both take part, they belong to the same sequence, and j's index inside the sequence
lies in the band of flash_attn's causal / window_size around i's bottom-right diagonal. ``mismatch``
compares the two on every query row that sees at least one key; rows that see none (padding) come
back from fa3lite as zeros.
"""
from __future__ import annotations

import torch

# Additive values at or below this are "masked": exp() of a score this far below its row's maximum is
# exactly 0 in float32 (below -104), with a wide margin. It covers -inf, float16's minimum (-65504),
# the minimum of bfloat16 / float32 transformers uses, and the -10000 of older masks.
MASKED_AT_OR_BELOW = -1.0e4


def allowed(mask: torch.Tensor, batch: int, heads: int, seqlen_q: int,
            seqlen_k: int) -> tuple[torch.Tensor | None, torch.Tensor | None, str | None]:
    """(allowed, bias, reason): ``allowed`` (B, h, Sq, Sk) bool (h is 1 or the mask's heads) where the
    4-D ``mask`` lets a query see a key; ``bias`` a 0-d bool tensor, True when an additive mask holds
    values other than 0 and masked ones (None for boolean masks); ``reason`` instead of both when the
    mask cannot be read as a pattern for these shapes (it then goes to torch unchanged)."""
    shape = tuple(mask.shape)
    wanted = (batch, heads, seqlen_q, seqlen_k)
    if any(got not in (1, want) for got, want in zip(shape[:3], wanted[:3])) or shape[3] != seqlen_k:
        return None, None, (f"attention_mask.shape: expected a 4-D mask broadcastable to (batch, heads, q_len, "
                            f"kv_len) = {wanted} for fa3lite, got {shape}")
    if mask.dtype == torch.bool:
        pattern, bias = mask, None
    elif mask.dtype.is_floating_point:
        pattern = mask == 0
        bias = (~(pattern | (mask <= MASKED_AT_OR_BELOW))).any()
    else:
        return None, None, (f"attention_mask.dtype: expected torch.bool or a floating-point dtype for fa3lite, "
                            f"got {mask.dtype}")
    return pattern.expand(batch, -1, seqlen_q, seqlen_k), bias, None


def seen(allowed_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(query rows that see a key (B, Sq), key columns some query sees (B, Sk)) of a (B, h, Sq, Sk)
    boolean pattern: the tokens a varlen layout of it keeps."""
    return allowed_mask.any(dim=3).any(dim=1), allowed_mask.any(dim=2).any(dim=1)


def expected(counted, causal: bool, window_size: tuple[int, int]) -> torch.Tensor:
    """(B, 1, Sq, Sk) bool: the keys fa3lite lets each query row see for the varlen layout
    ``counted`` (a _varlen_layout.Counted) with flash_attn's ``causal`` and ``window_size``."""
    tokens = counted.tokens
    visible = tokens.keep_q[:, :, None] & tokens.keep_k[:, None, :]
    visible &= tokens.seq_q[:, :, None] == tokens.seq_k[:, None, :]
    left, right = window_size
    if causal:
        right = 0
    rank_k = counted.rank_k[:, None, :]
    diagonal = counted.diagonal_q[:, :, None]
    if right >= 0:
        visible &= rank_k <= diagonal + right
    if left >= 0:
        visible &= rank_k >= diagonal - left
    return visible.unsqueeze(1)


def mismatch(allowed_mask: torch.Tensor, expected_mask: torch.Tensor, keep_q: torch.Tensor) -> torch.Tensor:
    """0-d bool tensor: True when ``allowed_mask`` (B, h, Sq, Sk) and ``expected_mask`` (B, 1, Sq, Sk)
    differ on a kept query row (``keep_q`` (B, Sq))."""
    differs = (allowed_mask != expected_mask) & keep_q[:, None, :, None]
    return differs.any()
