"""The feature rows' shapes (issue 12), beside the dense grid (grid.py) at its tokens per batch and model
width (H = width // d), for each head dim of the run:

  window  causal with window_size (4096, 0) (Mistral-style: each query sees itself and the 4096 keys
          before it) at S = 16k: q, k, v (B, S, H, d), B = max(1, tokens // S), through flash_attn_func.
  varlen  a packed batch of random lengths (varlen_lengths) summing to exactly `tokens`, causal and
          full (as the run's --causal selects): q, k, v (tokens, H, d) with int32 offsets, through
          flash_attn_varlen_func.
  dense   the varlen row's comparator at equal tokens: flash_attn_func on (n, round(tokens / n), H, d)
          with n the varlen batch's count of sequences, i.e. as many sequences of its mean length
          and the same mask. It isolates what packing costs (one launch over ragged sequences, offsets
          read on the GPU) from what the lengths cost, which TFLOP/s already normalizes.

FLOPs: every row counts the (query, key) pairs its mask leaves, exactly, per sequence
(flops.band_flops): the band for a window, each sequence's own triangle or square for varlen and
dense, so varlen / dense compares like with like (the dense grid's causal S*S/2 is a convention).

Each case also names the reduced shape its correctness is checked at (FeatureCase.reduced).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, replace

from .flops import band_flops
from .grid import GridSpec

WINDOW = "window"
VARLEN = "varlen"
DENSE = "dense"
KINDS = (WINDOW, VARLEN, DENSE)

NO_WINDOW = (-1, -1)
_K = 1024
WINDOW_SEQLEN = 16 * _K  # issue 12: "4k window at 16k"
WINDOW_SIZE = (4 * _K, 0)  # Mistral 7B's sliding window: 4096 keys back, none ahead
VARLEN_MAX_SEQLEN = 4 * _K  # documents up to 4k, as packed for pretraining
VARLEN_MIN_FRACTION = 8  # shortest drawn length S_max / 8: short sequences stay a minority of tokens
VARLEN_SEED = 0  # the same batch in every run, so runs compare

# The checks' reduced shapes: small enough for an fp32 reference of every head in well under a second.
CHECK_HEADS = 2
CHECK_WINDOW_SEQLEN = 1 * _K
CHECK_WINDOW_SIZE = (256, 0)  # the rows' window-to-length ratio (4k of 16k) at the check's length
# Off every tile (64, 80, 128, 176, 192), a sequence of length 1, and one spanning more than two tiles.
CHECK_VARLEN_SEQLENS = (200, 1, 391, 63, 130)
CHECK_DENSE_BATCH = 2
CHECK_DENSE_SEQLEN = 333  # off every tile, as above


@dataclass(frozen=True)
class FeatureCase:
    """One feature row's shape: sequences of lengths `seqlens` (each Sq == Sk), `heads` heads of
    `head_dim`, mask `causal` and `window` (flash_attn's window_size, (-1, -1): none), `dtype`.

    WINDOW and DENSE: every length the same, q, k, v (B, S, H, d) with B = len(seqlens).
    VARLEN: q, k, v packed as (sum(seqlens), H, d), sequence b at rows sum(seqlens[:b]) onwards.
    """

    kind: str
    head_dim: int
    heads: int
    causal: bool
    window: tuple[int, int]
    seqlens: tuple[int, ...]
    dtype: str

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind: expected one of {KINDS}, got {self.kind!r}")
        if not self.seqlens or min(self.seqlens) < 1:
            raise ValueError(f"seqlens: expected one or more positive lengths, got {self.seqlens}")
        if not self.packed and len(set(self.seqlens)) != 1:
            raise ValueError(f"seqlens: a {self.kind} case has one length for every sequence, got {self.seqlens}")

    @property
    def packed(self) -> bool:
        return self.kind == VARLEN

    @property
    def mask(self) -> str:
        return "causal" if self.causal else "full"

    @property
    def tokens(self) -> int:
        return sum(self.seqlens)

    @property
    def n_seqs(self) -> int:
        return len(self.seqlens)

    @property
    def max_seqlen(self) -> int:
        return max(self.seqlens)

    @property
    def elements(self) -> int:
        """Elements in one of q, k, v (or out, dout)."""
        return self.tokens * self.heads * self.head_dim

    @property
    def label(self) -> str:
        window = f" window {self.window}" if self.window != NO_WINDOW else ""
        return f"{self.kind} d={self.head_dim} {self.mask}{window} {self.n_seqs} seqs {self.tokens} tokens"

    def flops(self, mode: str) -> float:
        """FLOPs of one call in `mode` on the pairs the mask leaves (flops.band_flops)."""
        return band_flops(self.seqlens, self.heads, self.head_dim, self.causal, self.window, mode)

    def reduced(self) -> "FeatureCase":
        """The shape this case is checked at: the same kind, head dim and mask, CHECK_HEADS heads, and
        the CHECK_* lengths (the window scaled with them)."""
        if self.kind == WINDOW:
            return replace(self, heads=CHECK_HEADS, seqlens=(CHECK_WINDOW_SEQLEN,), window=CHECK_WINDOW_SIZE)
        if self.kind == VARLEN:
            return replace(self, heads=CHECK_HEADS, seqlens=CHECK_VARLEN_SEQLENS)
        return replace(self, heads=CHECK_HEADS, seqlens=(CHECK_DENSE_SEQLEN,) * CHECK_DENSE_BATCH)


def varlen_lengths(tokens: int, max_seqlen: int = VARLEN_MAX_SEQLEN, seed: int = VARLEN_SEED) -> tuple[int, ...]:
    """Sequence lengths drawn uniformly from [max_seqlen // VARLEN_MIN_FRACTION, max_seqlen] (at least
    1) with `seed`, until they reach `tokens`; the last one is trimmed so that they sum to exactly
    `tokens` (it alone may fall below the lower bound, never below 1)."""
    if tokens < 1:
        raise ValueError(f"tokens: expected a positive number of tokens, got {tokens}")
    if max_seqlen < 1:
        raise ValueError(f"max_seqlen: expected a positive length, got {max_seqlen}")
    draw = random.Random(seed)
    shortest = max(1, max_seqlen // VARLEN_MIN_FRACTION)
    lengths, left = [], tokens
    while left > 0:
        n = min(draw.randint(shortest, max_seqlen), left)
        lengths.append(n)
        left -= n
    return tuple(lengths)


def build_feature_cases(spec: GridSpec, *, window_seqlen: int = WINDOW_SEQLEN,
                        window: tuple[int, int] = WINDOW_SIZE, varlen_max_seqlen: int = VARLEN_MAX_SEQLEN,
                        seed: int = VARLEN_SEED) -> list[FeatureCase]:
    """Per head dim (ascending): the window case, then for each of the spec's masks (full first) the
    varlen case and its dense comparator. The keywords shrink the shapes (tests)."""
    lengths = varlen_lengths(spec.tokens, varlen_max_seqlen, seed)
    equal_length = round(spec.tokens / len(lengths))
    cases = []
    for d in sorted(spec.head_dims):
        heads = spec.width // d
        cases.append(FeatureCase(WINDOW, d, heads, True, window,
                                 (window_seqlen,) * max(1, spec.tokens // window_seqlen), spec.dtype))
        for causal in sorted(spec.causal):
            cases.append(FeatureCase(VARLEN, d, heads, causal, NO_WINDOW, lengths, spec.dtype))
            cases.append(FeatureCase(DENSE, d, heads, causal, NO_WINDOW, (equal_length,) * len(lengths), spec.dtype))
    return cases
