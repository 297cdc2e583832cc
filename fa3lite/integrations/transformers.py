"""fa3lite as a Hugging Face transformers attention backend.

    import fa3lite.integrations.transformers as fa3lite_hf
    fa3lite_hf.register()
    model = AutoModelForCausalLM.from_pretrained(name, attn_implementation="fa3lite")

register() enters ``attention_forward`` in transformers' AttentionInterface and the mask function
of _hf_masks in its AttentionMaskInterface, both as "fa3lite" (transformers >= 4.56). The attention
function follows transformers' FlashAttention integration (transformers.integrations.flash_attention
and modeling_flash_attention_utils) case by case; query / key / value come as (B, H, S, D) and
reach fa3lite as (B, S, H, D) views:

    attention_mask / keywords             fa3lite runs
    None                                  flash_attn_func; causal aligned bottom-right, so a KV-cache
                                          decode step (Sq < Sk) sees every cached key
    None with cu_seq_lens_q/k and         flash_attn_varlen_func on the flattened batch
      max_length_q/k
    None, a batch of one row whose        flash_attn_varlen_func, a sequence starting wherever
      position_ids restart (packing)        position_ids takes its minimum
    2-D (B, n) key mask (1 = token)       unpad, flash_attn_varlen_func, re-pad with zeros. Key slots
                                          past n are dropped (a static cache's empty tail); query i is
                                          key column i + n - Sq (queries are the newest tokens), a
                                          single query (decode) is always a token
    4-D, boolean or additive              the same, if a varlen layout (one sequence per row, or the
                                          packed sequences of position_ids) reproduces the mask exactly
                                          on every query row that sees a key -- checked on the device
                                          (_mask_pattern) -- else torch

Per-call options (causal, sliding window, softcap, sinks, scale, deterministic): _hf_options. float32
inputs of a half-precision model (autocast, PEFT) are cast to its compute dtype first: _hf_dtype.

torch runs instead (transformers' sdpa_attention_forward, or the models' eager math where softcap or
sinks are involved; a FallbackWarning names the reason, once per kind) for dropout > 0 (training
with attention dropout), a 4-D mask that no varlen layout reproduces (a bias, overlays, per-head
masks, ...), transformers' paged cache (continuous batching) and position_bias. fa3lite itself runs
its torch math for what its kernels do not take (CPU tensors, float32, other head dims), with its own
FallbackWarning.

Query rows that are padding come back as zeros, as with FlashAttention. Host syncs: at most one per
call (one .tolist() of a few numbers), and only with a mask, a packed-sequence check (one row with
position_ids) or tensor max_length_q/k.
"""
from __future__ import annotations

import torch

from .. import api
from . import _hf_dtype, _hf_fallback, _hf_masks, _hf_options, _mask_pattern, _varlen_layout

NAME = "fa3lite"
HF_REQUIREMENT = "transformers>=4.56"
_PACKED_KEYWORDS = ("cu_seq_lens_q", "cu_seq_lens_k", "max_length_q", "max_length_k")


def register() -> None:
    """Make attn_implementation="fa3lite" available to transformers models (idempotent)."""
    try:
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface
    except ImportError as exc:
        raise ImportError(f"fa3lite.integrations.transformers needs {HF_REQUIREMENT}: pip install 'fa3lite[hf]'"
                          f" ({exc})") from exc
    AttentionInterface.register(NAME, attention_forward)
    AttentionMaskInterface.register(NAME, _hf_masks.fa3lite_mask)


def attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None, sliding_window=None,
                      softcap=None, is_causal=None, s_aux=None, position_ids=None, deterministic=None, **kwargs):
    """transformers' attention-interface call: query (B, Hq, Sq, D), key / value (B, Hk, Sk, D) with Hq
    a multiple of Hk, ``attention_mask`` as _hf_masks builds it (or any 2-D / 4-D mask). Returns
    (attn_output (B, Sq, Hq, Dv) contiguous, None): fa3lite returns no attention weights."""
    if kwargs.get("sinks") is not None:
        raise ValueError("sinks: per-token attention sinks are not supported by the fa3lite backend (gpt-oss's "
                         "per-head sinks come as s_aux); use the model's eager attention")
    query, key, value = _hf_dtype.cast(query, key, value, module)
    opts = _hf_options.options(module, query, key.shape[2], scaling=scaling, dropout=dropout,
                               sliding_window=sliding_window, softcap=softcap, is_causal=is_causal, s_aux=s_aux,
                               deterministic=deterministic)
    call = _Call(module, query, key, value, opts, _hf_fallback.reasons(opts, kwargs), kwargs)
    if query.numel() == 0:
        return query.new_zeros(query.shape[0], query.shape[2], query.shape[1], value.shape[3]), None
    if attention_mask is None:
        if all(kwargs.get(name) is not None for name in _PACKED_KEYWORDS):
            return call.given_varlen(*(kwargs[name] for name in _PACKED_KEYWORDS)), None
        return call.unmasked(position_ids), None
    if attention_mask.dim() == 2:
        return call.key_mask(attention_mask), None
    if attention_mask.dim() == 4:
        return call.full_mask(attention_mask, position_ids), None
    raise ValueError(f"attention_mask: expected None, a 2-D (batch, kv_len) padding mask or a 4-D (batch, heads, "
                     f"q_len, kv_len) mask, got shape {tuple(attention_mask.shape)}")


class _Call:
    """One attention call's tensors and options, and its ways to run."""

    def __init__(self, module, query, key, value, opts, reasons, kwargs):
        self.module, self.query, self.key, self.value = module, query, key, value
        self.opts, self.reasons = opts, reasons
        # Keywords for transformers' SDPA fallback: ours are consumed, the rest (position_bias, cache,
        # output_attentions, ...) pass through.
        self.kwargs = {k: v for k, v in kwargs.items() if k not in _PACKED_KEYWORDS}
        self.batch, self.seqlen_q = query.shape[0], query.shape[2]

    def _bshd(self, key_slots: int | None = None):
        """(q, k, v) as (B, S, H, D) views, keys cut to their first ``key_slots``."""
        key, value = self.key, self.value
        if key_slots is not None:
            key, value = key[:, :, :key_slots], value[:, :, :key_slots]
        return (t.transpose(1, 2) for t in (self.query, key, value))

    def unmasked(self, position_ids):
        """No mask: the packed sequences of position_ids if they restart, else flash_attn_func (or torch,
        with a mask only where torch's top-left causal alignment would differ)."""
        packed = self._packed_tokens(position_ids, None)
        if packed is not None:
            return self._run(packed)
        if self.reasons:
            if _mask_optional(self.opts, self.seqlen_q, self.key.shape[2]):
                return self._torch(None)
            keep_q = self.query.new_ones(self.batch, self.seqlen_q, dtype=torch.bool)
            keep_k = self.key.new_ones(self.batch, self.key.shape[2], dtype=torch.bool)
            return self._run(_varlen_layout.by_row(keep_q, keep_k))
        return api.flash_attn_func(*self._bshd(), **self.opts.flash_kwargs())

    def given_varlen(self, cu_seqlens_q, cu_seqlens_k, max_length_q, max_length_k):
        """transformers' padding-free keywords: sequences at cu_seqlens_q/k of the flattened batch."""
        cu_q, cu_k = (cu.to(torch.int32) for cu in (cu_seqlens_q, cu_seqlens_k))
        if self.reasons:
            return self._run(_varlen_layout.by_cu_seqlens(cu_q, cu_k, self.batch, self.seqlen_q, self.key.shape[2]))
        q, k, v = (t.reshape(-1, *t.shape[2:]) for t in self._bshd())
        max_q, max_k = _host_ints(max_length_q, max_length_k)
        out = api.flash_attn_varlen_func(q, k, v, cu_q, cu_k, max_q, max_k, **self.opts.flash_kwargs())
        return out.view(self.batch, self.seqlen_q, *out.shape[1:])

    def key_mask(self, mask):
        """A 2-D (B, n) key mask (nonzero = token), unpadded as transformers does for FlashAttention."""
        seqlen_k = self.key.shape[2]
        if mask.shape[0] != self.batch:
            raise ValueError(f"attention_mask.shape[0] (batch): expected {self.batch}, got {mask.shape[0]}")
        keep_k = mask[:, -seqlen_k:].to(torch.bool)
        slots = keep_k.shape[1]
        if self.seqlen_q == slots:
            keep_q = keep_k
        elif self.seqlen_q == 1:
            keep_q = keep_k.new_ones(self.batch, 1)
        elif self.seqlen_q < slots:
            keep_q = keep_k[:, -self.seqlen_q:]
        else:
            raise ValueError(f"attention_mask: a 2-D padding mask of {slots} keys cannot place {self.seqlen_q} "
                             f"queries (the queries are the last tokens of the keys)")
        return self._run(_varlen_layout.by_row(keep_q, keep_k), key_slots=slots)

    def full_mask(self, mask, position_ids):
        """A 4-D mask: on the kernels if a varlen layout reproduces it, else in torch."""
        seqlen_k = self.key.shape[2]
        pattern, bias, reason = _mask_pattern.allowed(mask, self.batch, self.query.shape[1], self.seqlen_q, seqlen_k)
        if reason is not None or self.reasons:
            return self._torch(mask, self.reasons + ([reason] if reason else []))
        keep_q, keep_k = _mask_pattern.seen(pattern)
        tokens = self._packed_tokens(position_ids, (keep_q, keep_k))
        if tokens is None:
            tokens = _varlen_layout.by_row(keep_q, keep_k)
        counted = _varlen_layout.count(tokens)
        expected = _mask_pattern.expected(counted, self.opts.causal, self.opts.window_size)
        flags = (_mask_pattern.mismatch(pattern, expected, keep_q),) + ((bias,) if bias is not None else ())
        host = _varlen_layout.fetch(counted, flags)
        if any(host.flags):
            why = [_MISMATCH] if host.flags[0] else []
            why += [_BIAS] if len(host.flags) > 1 and host.flags[1] else []
            return self._torch(mask, why)
        return self._varlen(counted, host)

    def _packed_tokens(self, position_ids, keep):
        """Tokens of the sequences that position_ids packs into a batch of one row (self-attention of
        more than one query), or None. ``keep``: the (query, key) tokens that take part, else all."""
        seqlen_k = self.key.shape[2]
        if (position_ids is None or self.batch != 1 or self.seqlen_q != seqlen_k or self.seqlen_q < 2
                or position_ids.numel() != self.seqlen_q):
            return None
        if keep is None:
            every = self.query.new_ones(1, self.seqlen_q, dtype=torch.bool)
            keep = (every, every)
        return _varlen_layout.by_position_ids(position_ids, *keep)

    def _run(self, tokens, key_slots=None):
        """Attention over ``tokens``' layout: on the kernels, or in torch with the mask the layout
        stands for when the call has reasons to fall back."""
        counted = _varlen_layout.count(tokens)
        if self.reasons:
            mask = _mask_pattern.expected(counted, self.opts.causal, self.opts.window_size)
            return self._torch(mask, key_slots=key_slots)
        return self._varlen(counted, _varlen_layout.fetch(counted), key_slots)

    def _varlen(self, counted, host, key_slots=None):
        """The kernels over a counted layout: flash_attn_func when it is the padded batch itself, else
        gather the kept rows, flash_attn_varlen_func, and scatter back to (B, Sq, Hq, Dv) with zero
        padding rows."""
        q, k, v = self._bshd(key_slots)
        layout = _varlen_layout.layout(counted, host)
        if layout.dense:
            return api.flash_attn_func(q, k, v, **self.opts.flash_kwargs())
        out = api.flash_attn_varlen_func(
            _varlen_layout.gather(q, layout.rows_q), _varlen_layout.gather(k, layout.rows_k),
            _varlen_layout.gather(v, layout.rows_k), layout.cu_seqlens_q, layout.cu_seqlens_k, layout.max_seqlen_q,
            layout.max_seqlen_k, **self.opts.flash_kwargs())
        return _varlen_layout.scatter(out, layout.rows_q, self.batch, self.seqlen_q)

    def _torch(self, mask, reasons=None, key_slots=None):
        """The torch path (_hf_fallback) with ``mask`` (None or 4-D), warning with ``reasons`` (default:
        the call's own), keys cut to their first ``key_slots``."""
        key, value = self.key, self.value
        if key_slots is not None:
            key, value = key[:, :, :key_slots], value[:, :, :key_slots]
        found = self.reasons if reasons is None else reasons
        return _hf_fallback.attention(self.module, self.query, key, value, mask, self.opts.causal, self.opts, found,
                                      self.kwargs)


_MISMATCH = ("attention_mask: a 4-D mask that no varlen layout of this layer's causal / sliding-window pattern "
             "reproduces (not a pure left/right padding or packed-sequence mask)")
_BIAS = "attention_mask: an additive mask with values other than 0 and masked (a bias) needs torch"


def _host_ints(*values) -> list[int]:
    """``values`` (ints or 0-d tensors, e.g. transformers' max_length_q / max_length_k) as ints; the
    tensors are read together, in one sync."""
    tensors = [v.reshape(()) for v in values if isinstance(v, torch.Tensor)]
    read = iter(torch.stack(tensors).tolist() if tensors else ())
    return [next(read) if isinstance(v, torch.Tensor) else int(v) for v in values]


def _mask_optional(opts, seqlen_q: int, seqlen_k: int) -> bool:
    """Whether torch's SDPA without a mask (causal aligned top-left, none for one query) computes what
    fa3lite's bottom-right causal / window pattern would, so the torch path needs no mask."""
    aligned = not opts.causal or seqlen_q == seqlen_k or seqlen_q == 1
    return aligned and opts.window_size == _hf_options.NO_WINDOW
