"""The implementations the decode grid times, each behind one adapter taking decode_inputs.DecodeInputs
and returning out (B, Sq, Hq, d).

  fa3lite          fa3lite.flash_attn_with_kvcache, no append (k = v = None), pinned to the kernels
  fa3lite_append   the same call appending the Sq new rows first (k_new, v_new at cache_seqlens L - Sq),
                   as a serving step does; the rows written equal the cache's, so values never change
  sdpa             the baseline: torch SDPA (its own backend choice) on (B, H, L, d) views of the cache
                   slice, enable_gqa=True; a paged cache is gathered into (B, L, Hk, d) first, inside
                   the timed call (a server using SDPA pays that gather every step)
  cudnn            the same call restricted to SDPBackend.CUDNN_ATTENTION
  fa4              FlashAttention-4 (flash_attn.cute): its flash_attn_with_kvcache where the package has
                   one, else flash_attn_varlen_func with seqused_k (and page_table), its paged decode
                   entry, asking for its split heuristic (num_splits=0) and falling back to its
                   default when that raises
Sq > 1 needs the bottom-right causal mask; SDPA's is_causal is top-left, so the SDPA rows pass an
explicit (Sq, L) boolean mask, built once per case outside the timing.
"""
from __future__ import annotations

import contextlib
import importlib
from dataclasses import dataclass, field
from typing import Callable, ContextManager

import torch

from .decode_cases import DecodeCase
from .decode_inputs import DecodeInputs, logical_kv
from .impls import first_output
from .reference import visible_mask
from .runner import exception_reason, is_oom

FA3LITE = "fa3lite"
FA3LITE_APPEND = "fa3lite_append"
SDPA = "sdpa"
CUDNN = "cudnn"
FA4 = "fa4"
FA4_MODULE = "flash_attn.cute"
FA4_PACKAGE = "flash-attn-4"
# FA4's varlen entry defaults to num_splits=1 (never splits the cache across CTAs); 0 asks for its
# heuristic, what a decode step wants.
FA4_SPLIT_HEURISTIC = 0
BASELINE = SDPA
DECODE_FA3LITE_IMPLS = (FA3LITE, FA3LITE_APPEND)


@dataclass(frozen=True)
class DecodeBound:
    """An implementation fixed to one case: call(inputs) -> out (B, Sq, Hq, d). context() is entered
    around a batch of calls (SDPA's backend choice), outside each call's timing."""

    call: Callable[[DecodeInputs], torch.Tensor]
    context: Callable[[], ContextManager] = field(default=contextlib.nullcontext)


def _import_reason(module: str, attr: str | None = None) -> str | None:
    try:
        mod = importlib.import_module(module)
    except Exception as exc:  # an installed but broken package is just as absent
        return f"cannot import {module}: {type(exc).__name__}: {exc}"
    if attr is not None and not hasattr(mod, attr):
        return f"{module} has no {attr}"
    return None


class DecodeImpl:
    """Base adapter. name: key in the files; label: column heading; appends: whether the call writes
    new rows into the cache first; notes: what the adapter decided on the way (shown in the report)."""

    name = ""
    label = ""
    appends = False

    def __init__(self):
        self.notes: list[str] = []

    def probe(self) -> str | None:
        """None when the implementation can be imported here, else why it is absent."""
        raise NotImplementedError

    def bind(self, case: DecodeCase, device) -> DecodeBound:
        """The call for this case; raises NotImplementedError where the implementation has none."""
        raise NotImplementedError


class Fa3liteDecode(DecodeImpl):
    """fa3lite.flash_attn_with_kvcache. backend: "fa3lite" (the kernels, never a silent fallback) in
    a benchmark run; the CPU tests pass "auto" to run the torch fallback."""

    def __init__(self, append: bool, backend: str = "fa3lite"):
        super().__init__()
        self.appends, self.backend = append, backend
        self.name, self.label = (FA3LITE_APPEND, "fa3lite+append") if append else (FA3LITE, "fa3lite")

    def probe(self):
        return _import_reason("fa3lite", "flash_attn_with_kvcache")

    def bind(self, case, device):
        import fa3lite

        fn, backend, scale = fa3lite.flash_attn_with_kvcache, self.backend, case.head_dim ** -0.5
        if self.appends:
            def call(x: DecodeInputs):
                return fn(x.q, x.k_cache, x.v_cache, x.k_new, x.v_new, cache_seqlens=x.append_at,
                          page_table=x.page_table, softmax_scale=scale, causal=True, backend=backend)
        else:
            def call(x: DecodeInputs):
                return fn(x.q, x.k_cache, x.v_cache, cache_seqlens=x.cache_seqlens, page_table=x.page_table,
                          softmax_scale=scale, causal=True, backend=backend)
        return DecodeBound(call)


class SdpaDecode(DecodeImpl):
    """torch SDPA on the cache slice; backend_name None lets SDPA choose (the baseline), else it is
    restricted to that SDPBackend."""

    def __init__(self, name: str, label: str, backend_name: str | None):
        super().__init__()
        self.name, self.label, self._backend_name = name, label, backend_name

    def probe(self):
        reason = _import_reason("torch.nn.attention", "sdpa_kernel")
        if reason is None and self._backend_name and not hasattr(torch.nn.attention.SDPBackend, self._backend_name):
            reason = f"torch {torch.__version__} has no SDPBackend.{self._backend_name}"
        return reason

    def bind(self, case, device):
        from torch.nn.attention import SDPBackend, sdpa_kernel

        sdpa, scale = torch.nn.functional.scaled_dot_product_attention, case.head_dim ** -0.5
        # Sq = 1 sees every key: no mask, so SDPA may pick its mask-free kernels.
        mask = visible_mask(case.sq, case.cache_len, True, device=device) if case.sq > 1 else None

        def call(x: DecodeInputs):
            k, v = (logical_kv(case, c, x.page_table).transpose(1, 2) for c in (x.k_cache, x.v_cache))
            out = sdpa(x.q.transpose(1, 2), k, v, attn_mask=mask, scale=scale, enable_gqa=True)
            return out.transpose(1, 2)

        if self._backend_name is None:
            return DecodeBound(call)
        backend = getattr(SDPBackend, self._backend_name)
        return DecodeBound(call, lambda: sdpa_kernel(backend))


class Fa4Decode(DecodeImpl):
    """FlashAttention-4's decode entry (module docstring). Its split heuristic is asked for on the
    varlen entry; the first time that raises while the same call without it succeeds (an FA4 without
    split-KV on this GPU), this adapter drops num_splits for the rest of the run and says so in notes."""

    name, label = FA4, "FA4"

    def __init__(self):
        super().__init__()
        self._split_kwargs = {"num_splits": FA4_SPLIT_HEURISTIC}

    def probe(self):
        reason = _import_reason(FA4_MODULE)
        if reason is None:
            module = importlib.import_module(FA4_MODULE)
            if not any(hasattr(module, f) for f in ("flash_attn_with_kvcache", "flash_attn_varlen_func")):
                reason = f"{FA4_MODULE} has neither flash_attn_with_kvcache nor flash_attn_varlen_func"
        return None if reason is None else f"{FA4_PACKAGE} not installed ({reason})"

    def bind(self, case, device):
        module = importlib.import_module(FA4_MODULE)
        scale = case.head_dim ** -0.5
        if hasattr(module, "flash_attn_with_kvcache"):
            fn = module.flash_attn_with_kvcache

            def call(x: DecodeInputs):
                return first_output(fn(x.q, x.k_cache, x.v_cache, cache_seqlens=x.cache_seqlens,
                                       page_table=x.page_table, softmax_scale=scale, causal=True))
            return DecodeBound(call)
        varlen = module.flash_attn_varlen_func

        def run(x: DecodeInputs, extra: dict):
            return first_output(varlen(x.q, x.k_cache, x.v_cache, seqused_k=x.cache_seqlens, page_table=x.page_table,
                                       softmax_scale=scale, causal=True, **extra))

        def call(x: DecodeInputs):
            if not self._split_kwargs:
                return run(x, {})
            try:
                return run(x, self._split_kwargs)
            except Exception as exc:
                if is_oom(exc):
                    raise
                # Raises when num_splits was not what FA4 refused: the heuristic then stays asked for.
                out = run(x, {})
                self.notes.append(f"FA4 refused num_splits={FA4_SPLIT_HEURISTIC} at {case.label} "
                                  f"({exception_reason(exc)}); its rows from there on use its default")
                self._split_kwargs = {}
                return out

        return DecodeBound(call)


def all_decode_impls(fa3lite_backend: str = "fa3lite") -> list[DecodeImpl]:
    """Every decode implementation in table order: fa3lite, its appending call, the SDPA baseline,
    cuDNN, FA4."""
    return [
        Fa3liteDecode(append=False, backend=fa3lite_backend),
        Fa3liteDecode(append=True, backend=fa3lite_backend),
        SdpaDecode(SDPA, "SDPA", None),
        SdpaDecode(CUDNN, "cuDNN", "CUDNN_ATTENTION"),
        Fa4Decode(),
    ]


DECODE_IMPL_NAMES = tuple(i.name for i in all_decode_impls())


def select_decode_impls(names: tuple[str, ...] | None, fa3lite_backend: str = "fa3lite") -> list[DecodeImpl]:
    """The decode implementations named (all when None), in table order; unknown names raise
    ValueError."""
    impls = all_decode_impls(fa3lite_backend)
    if not names:
        return impls
    unknown = [n for n in names if n not in DECODE_IMPL_NAMES]
    if unknown:
        raise ValueError(f"impl: expected names from {DECODE_IMPL_NAMES} with --decode, got {unknown}")
    return [i for i in impls if i.name in names]
