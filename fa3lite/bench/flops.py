"""FLOP counts by FlashAttention's convention, and the TFLOP/s they give.

forward  = 4 * B * H * Sq * Sk * d  (two matmuls of 2*Sq*Sk*d each), halved when causal;
backward = 2.5 x forward (five matmuls instead of two); forward+backward = 3.5 x forward.
The causal halving is the convention, not the exact count of unmasked entries.
"""
from __future__ import annotations

FWD_MATMUL_FLOPS = 4
BWD_OVER_FWD = 2.5
_MODE_FACTOR = {"fwd": 1.0, "bwd": BWD_OVER_FWD, "fwdbwd": 1.0 + BWD_OVER_FWD}


def attention_flops(
    batch: int, heads: int, seqlen_q: int, seqlen_k: int, head_dim: int, causal: bool, mode: str
) -> float:
    """FLOPs of one call in `mode` ('fwd', 'bwd' or 'fwdbwd')."""
    if mode not in _MODE_FACTOR:
        raise ValueError(f"mode: expected one of {tuple(_MODE_FACTOR)}, got {mode!r}")
    fwd = FWD_MATMUL_FLOPS * batch * heads * seqlen_q * seqlen_k * head_dim
    if causal:
        fwd /= 2
    return fwd * _MODE_FACTOR[mode]


def cell_flops(cell, mode: str) -> float:
    """attention_flops for a grid.Cell (Sq == Sk)."""
    return attention_flops(
        cell.batch, cell.heads, cell.seqlen, cell.seqlen, cell.head_dim, cell.causal, mode
    )


def tflops(flops: float, ms: float) -> float:
    """FLOPs done in `ms` milliseconds -> TFLOP/s."""
    if ms <= 0:
        raise ValueError(f"ms: expected a positive time, got {ms}")
    return flops / (ms * 1e-3) / 1e12
