"""One transformers attention call's options in flash_attn_func's terms.

transformers hands each layer's options to the attention interface as keywords; its flash-attention
integration (transformers.modeling_flash_attention_utils) maps them onto FlashAttention, and this
module maps them the same way:

* causal: the call's ``is_causal`` when given, else ``module.is_causal`` (decoders set it True;
  modules without the attribute are taken as causal, as transformers' SDPA integration does).
* sliding_window = w: a window of w keys. transformers' masks let query position i see key position
  j iff i - w < j (and j <= i when causal), i.e. flash_attn's window_size = (w - 1, w - 1), whose
  right edge causal=True sets to 0. As in transformers, the window is passed only when the padded key
  length exceeds w: shorter, it cannot cut anything. (Bidirectional models that mean |i - j| <= w
  pass w + 1, as ModernBERT does.)
* softcap: None or 0 = off.
* s_aux: gpt-oss's learnable sinks, one logit per query head: flash_attn_func's learnable_sink. It
  keeps its own dtype (transformers casts it to the query's only because FlashAttention wants half
  precision) and gets a gradient.
* deterministic: the call's keyword, else torch.are_deterministic_algorithms_enabled() or
  FLASH_ATTENTION_DETERMINISTIC=1 (the variable transformers reads for FlashAttention).
"""
from __future__ import annotations

import dataclasses
import math
import os

import torch

NO_WINDOW = (-1, -1)
DETERMINISTIC_ENV = "FLASH_ATTENTION_DETERMINISTIC"


@dataclasses.dataclass(frozen=True)
class Options:
    """flash_attn_func's keywords for one call, plus the dropout probability it cannot serve."""

    causal: bool
    window_size: tuple[int, int]
    softcap: float
    sink: torch.Tensor | None
    softmax_scale: float | None
    deterministic: bool
    dropout: float

    def flash_kwargs(self) -> dict:
        """The keywords flash_attn_func and flash_attn_varlen_func share."""
        return dict(softmax_scale=self.softmax_scale, causal=self.causal, window_size=self.window_size,
                    softcap=self.softcap, learnable_sink=self.sink, deterministic=self.deterministic)


def options(module, query: torch.Tensor, key_length: int, *, scaling, dropout, sliding_window, softcap, is_causal,
            s_aux, deterministic) -> Options:
    """Options of a call with query (B, Hq, Sq, D) and ``key_length`` keys (the padded Sk, before any
    slicing). Raises ValueError naming the first invalid argument."""
    causal = getattr(module, "is_causal", True) if is_causal is None else is_causal
    if deterministic is None:
        deterministic = torch.are_deterministic_algorithms_enabled() or os.environ.get(DETERMINISTIC_ENV) == "1"
    return Options(causal=bool(causal), window_size=window_size(sliding_window, key_length),
                   softcap=_softcap(softcap), sink=_sink(s_aux, query), softmax_scale=_scale(scaling),
                   deterministic=bool(deterministic), dropout=_dropout(dropout))


def window_size(sliding_window, key_length: int) -> tuple[int, int]:
    """flash_attn's (left, right) window of transformers' ``sliding_window`` (see the module docstring)."""
    if sliding_window is None:
        return NO_WINDOW
    if isinstance(sliding_window, bool) or not isinstance(sliding_window, int) or sliding_window < 1:
        raise ValueError(f"sliding_window: expected None or an int >= 1 (keys in the window), got {sliding_window!r}")
    if key_length <= sliding_window:
        return NO_WINDOW
    return (sliding_window - 1, sliding_window - 1)


def _softcap(softcap) -> float:
    if softcap is None:
        return 0.0
    if isinstance(softcap, bool) or not isinstance(softcap, (int, float)) or not (math.isfinite(softcap)
                                                                                 and softcap >= 0):
        raise ValueError(f"softcap: expected None or a finite real number >= 0 (0 = off), got {softcap!r}")
    return float(softcap)


def _sink(s_aux, query: torch.Tensor) -> torch.Tensor | None:
    if s_aux is None:
        return None
    heads = query.shape[1]
    if not isinstance(s_aux, torch.Tensor) or s_aux.dim() != 1 or s_aux.shape[0] != heads:
        got = tuple(s_aux.shape) if isinstance(s_aux, torch.Tensor) else type(s_aux).__name__
        raise ValueError(f"s_aux: expected None or a tensor of shape ({heads},), one sink logit per query head, "
                         f"got {got}")
    return s_aux


def _scale(scaling) -> float | None:
    if scaling is None:
        return None
    if isinstance(scaling, bool) or not isinstance(scaling, (int, float)) or not math.isfinite(scaling):
        raise ValueError(f"scaling: expected None or a finite real number, got {scaling!r}")
    return float(scaling)


def _dropout(dropout) -> float:
    if dropout is None:
        return 0.0
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0.0 <= dropout <= 1.0:
        raise ValueError(f"dropout: expected a probability in [0, 1], got {dropout!r}")
    return float(dropout)
