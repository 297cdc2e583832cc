"""FLOP counts by FlashAttention's convention, and the TFLOP/s they give.

forward  = 4 * B * H * Sq * Sk * d  (two matmuls of 2*Sq*Sk*d each), halved when causal;
backward = 2.5 x forward (five matmuls instead of two); forward+backward = 3.5 x forward.
The causal halving is the convention, not the exact count of unmasked entries.

The feature rows (feature_cases.py) count exactly instead: 4 * d * H times the (query, key) pairs
their mask leaves visible (band_pairs), per sequence, with the same backward factors.
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


def band_pairs(seqlen_q: int, seqlen_k: int, causal: bool, window: tuple[int, int] = (-1, -1)) -> int:
    """Visible (query, key) pairs of one head under flash_attn's mask, in closed form.

    Key j is visible to query i iff i + Sk - Sq - left <= j <= i + Sk - Sq + right (both edges
    relative to the bottom-right diagonal; a negative side is unbounded; causal sets right to 0).
    """
    if seqlen_q < 0 or seqlen_k < 0:
        raise ValueError(f"seqlen_q, seqlen_k: expected non-negative lengths, got {seqlen_q}, {seqlen_k}")
    left, right = window
    if causal:
        right = 0
    diagonal = seqlen_k - seqlen_q
    upto_upper = _pairs_up_to(seqlen_q, seqlen_k, diagonal + right) if right >= 0 else seqlen_q * seqlen_k
    below_lower = _pairs_up_to(seqlen_q, seqlen_k, diagonal - left - 1) if left >= 0 else 0
    return upto_upper - below_lower


def _pairs_up_to(seqlen_q: int, seqlen_k: int, offset: int) -> int:
    """Pairs (i, j), 0 <= i < Sq, 0 <= j < Sk, with j - i <= offset: sum over i of
    clamp(i + offset + 1, 0, Sk), a difference of two prefix sums of the clamped series."""
    return _clamped_prefix(seqlen_q + offset + 1, seqlen_k) - _clamped_prefix(offset + 1, seqlen_k)


def _clamped_prefix(n: int, cap: int) -> int:
    """sum of clamp(x, 0, cap) for x = 0 .. n - 1 (0 when n <= 0)."""
    if n <= 0:
        return 0
    if n <= cap + 1:
        return n * (n - 1) // 2
    return cap * (cap + 1) // 2 + (n - cap - 1) * cap


def band_flops(seqlens, heads: int, head_dim: int, causal: bool, window: tuple[int, int], mode: str) -> float:
    """FLOPs of one call over sequences of the given lengths (each Sq == Sk), counted on the pairs
    each sequence's mask leaves: 4 * d * H * band_pairs per sequence, times the mode's factor."""
    if mode not in _MODE_FACTOR:
        raise ValueError(f"mode: expected one of {tuple(_MODE_FACTOR)}, got {mode!r}")
    pairs = sum(band_pairs(n, n, causal, window) for n in seqlens)
    return FWD_MATMUL_FLOPS * heads * head_dim * pairs * _MODE_FACTOR[mode]


def tflops(flops: float, ms: float) -> float:
    """FLOPs done in `ms` milliseconds -> TFLOP/s."""
    if ms <= 0:
        raise ValueError(f"ms: expected a positive time, got {ms}")
    return flops / (ms * 1e-3) / 1e12
