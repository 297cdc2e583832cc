"""The benchmark grid: which (head dim, mask, sequence length) cells run, their shapes, and the modes.

Every cell holds a fixed number of tokens per batch and a fixed model width, so the batch shrinks
as the sequence grows (B = tokens // S) and the number of heads follows the head dim (H = width // d).
Tensors are (B, S, H, d) with Sq == Sk == S.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

MODES = ("fwd", "bwd", "fwdbwd")
HEAD_DIMS = (64, 128, 256)
DTYPES = ("bf16", "fp16")
DEFAULT_TOKENS = 16 * 1024
DEFAULT_WIDTH = 2048

PRESET_QUICK = "quick"
PRESET_DEFAULT = "default"
PRESET_FULL = "full"

_K = 1024


@dataclass(frozen=True)
class GridSpec:
    """What to run: the axes of the grid plus the fixed token count and model width."""

    head_dims: tuple[int, ...]
    causal: tuple[bool, ...]
    seqlens: tuple[int, ...]
    modes: tuple[str, ...]
    dtype: str = "bf16"
    tokens: int = DEFAULT_TOKENS
    width: int = DEFAULT_WIDTH


# quick: one head dim, three lengths spanning the range; default: the anchor grid of
# docs/hopper-facts.md (1k, 4k, 16k); full: every power of two from 512 to 16k.
PRESETS: dict[str, GridSpec] = {
    PRESET_QUICK: GridSpec((128,), (False, True), (1 * _K, 4 * _K, 16 * _K), MODES),
    PRESET_DEFAULT: GridSpec(HEAD_DIMS, (False, True), (1 * _K, 4 * _K, 16 * _K), MODES),
    PRESET_FULL: GridSpec(
        HEAD_DIMS, (False, True), (512, 1 * _K, 2 * _K, 4 * _K, 8 * _K, 16 * _K), MODES
    ),
}


@dataclass(frozen=True)
class Cell:
    """One shape of the grid: q, k, v are (batch, seqlen, heads, head_dim) of `dtype`."""

    head_dim: int
    causal: bool
    seqlen: int
    batch: int
    heads: int
    dtype: str

    @property
    def mask(self) -> str:
        return "causal" if self.causal else "full"

    @property
    def label(self) -> str:
        return f"d={self.head_dim} {self.mask} S={self.seqlen}"

    @property
    def elements(self) -> int:
        """Elements in one of q, k, v (or out, dout)."""
        return self.batch * self.seqlen * self.heads * self.head_dim


def make_spec(
    preset: str = PRESET_DEFAULT,
    head_dims: tuple[int, ...] | None = None,
    causal: tuple[bool, ...] | None = None,
    seqlens: tuple[int, ...] | None = None,
    modes: tuple[str, ...] | None = None,
    dtype: str = "bf16",
    tokens: int = DEFAULT_TOKENS,
    width: int = DEFAULT_WIDTH,
) -> GridSpec:
    """The preset's grid with every axis that is given replacing the preset's values for it."""
    if preset not in PRESETS:
        raise ValueError(f"preset: expected one of {sorted(PRESETS)}, got {preset!r}")
    spec = PRESETS[preset]
    spec = replace(
        spec,
        head_dims=_dedup(head_dims) if head_dims else spec.head_dims,
        causal=_dedup(causal) if causal else spec.causal,
        seqlens=_dedup(seqlens) if seqlens else spec.seqlens,
        modes=_ordered_modes(modes) if modes else spec.modes,
        dtype=dtype,
        tokens=tokens,
        width=width,
    )
    validate_spec(spec)
    return spec


def validate_spec(spec: GridSpec) -> None:
    """Raise ValueError naming the first axis value that cannot make a valid cell."""
    if spec.dtype not in DTYPES:
        raise ValueError(f"dtype: expected one of {DTYPES}, got {spec.dtype!r}")
    if spec.tokens <= 0:
        raise ValueError(f"tokens: expected a positive number of tokens per batch, got {spec.tokens}")
    if spec.width <= 0:
        raise ValueError(f"width: expected a positive model width, got {spec.width}")
    for d in spec.head_dims:
        if d <= 0 or d % 8:
            raise ValueError(f"head dim: expected a positive multiple of 8, got {d}")
        if spec.width % d:
            raise ValueError(f"head dim: {d} does not divide the model width {spec.width}")
    for s in spec.seqlens:
        if s <= 0:
            raise ValueError(f"seqlen: expected a positive length, got {s}")
    for m in spec.modes:
        if m not in MODES:
            raise ValueError(f"mode: expected one of {MODES}, got {m!r}")


def build_grid(spec: GridSpec) -> list[Cell]:
    """Cells ordered by head dim, then mask (full first), then sequence length.

    B = max(1, tokens // S): lengths above the token count still run one sequence.
    """
    cells = []
    for d in sorted(spec.head_dims):
        for causal in sorted(spec.causal):
            for s in sorted(spec.seqlens):
                cells.append(
                    Cell(
                        head_dim=d,
                        causal=causal,
                        seqlen=s,
                        batch=max(1, spec.tokens // s),
                        heads=spec.width // d,
                        dtype=spec.dtype,
                    )
                )
    return cells


def parse_seqlen(text: str) -> int:
    """'4096', '4k' or '4K' -> 4096 (k = 1024)."""
    t = text.strip().lower()
    try:
        if t.endswith("k"):
            return int(float(t[:-1]) * _K)
        return int(t)
    except ValueError:
        raise ValueError(f"seqlen: expected an integer such as 4096 or 4k, got {text!r}") from None


def parse_causal(text: str) -> tuple[bool, ...]:
    """'true'/'causal'/'1' -> (True,), 'false'/'full'/'0' -> (False,), 'both' -> (False, True)."""
    t = text.strip().lower()
    if t in ("1", "true", "yes", "causal"):
        return (True,)
    if t in ("0", "false", "no", "full"):
        return (False,)
    if t in ("both", "all"):
        return (False, True)
    raise ValueError(f"causal: expected true, false or both, got {text!r}")


def parse_mode(text: str) -> tuple[str, ...]:
    """'fwd', 'bwd', 'fwdbwd' (also 'fwd+bwd') or 'all'."""
    t = text.strip().lower().replace("+", "").replace("_", "")
    if t == "all":
        return MODES
    if t not in MODES:
        raise ValueError(f"mode: expected one of fwd, bwd, fwdbwd or all, got {text!r}")
    return (t,)


def _dedup(values):
    return tuple(dict.fromkeys(values))


def _ordered_modes(modes):
    wanted = set(modes)
    return tuple(m for m in MODES if m in wanted) + tuple(m for m in _dedup(modes) if m not in MODES)
