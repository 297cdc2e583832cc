"""Host side of the Hopper forward kernel: variant choice, tensor maps, params, launch.

Shapes (flash_attn layout): q (B, Sq, Hq, D), k/v (B, Sk, Hk, D), any strides with the last dim
contiguous; out (B, Sq, Hq, D) contiguous; lse (B, Hq, Sq) fp32, natural log.
"""
from __future__ import annotations

import functools
import math
import os

import torch

from .runtime import launch, tma
from .variants import FWD_PARAMS, FwdVariant

DTYPE_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16"}
LOG2E = 1.4426950408889634
MAX_GRID_X = (1 << 31) - 1
I32_MAX = (1 << 31) - 1


def debug_build() -> bool:
    """FA3LITE_DEBUG=1 selects kernels whose mbarrier (and semaphore) waits trap after a bounded spin."""
    return os.environ.get("FA3LITE_DEBUG", "0") not in ("", "0")


def _device_index(t: torch.Tensor) -> int:
    """The CUDA device index of a tensor (its device always names one)."""
    return t.device.index if t.device.index is not None else torch.cuda.current_device()


def fwd_variant(q, causal: bool) -> FwdVariant:
    return _variant(q.shape[-1], DTYPE_NAMES[q.dtype], bool(causal), debug_build())


@functools.cache
def _variant(head_dim: int, dtype: str, causal: bool, debug: bool) -> FwdVariant:
    return FwdVariant(head_dim, dtype, causal, debug=debug)


@functools.cache
def _loaded(variant: FwdVariant, device_index: int) -> launch.Loaded:
    """The variant's kernel on one device; cached here so a call hashes a small key, not the spec."""
    return launch.load(variant.spec(), device_index, variant.smem_bytes)


def forward(q, k, v, softmax_scale: float, causal: bool, causal_offset: int):
    """Attention forward on the Hopper kernel. Returns (out, lse); see the module docstring."""
    B, Sq, Hq, D = q.shape
    Sk, Hk = k.shape[1], k.shape[2]
    out = torch.empty((B, Sq, Hq, D), dtype=q.dtype, device=q.device)
    lse = torch.empty((B, Hq, Sq), dtype=torch.float32, device=q.device)
    if out.numel() == 0:
        return out, lse
    if Sk == 0:  # no keys at all: every row is fully masked
        out.zero_()
        lse.fill_(-math.inf)
        return out, lse
    if not softmax_scale > 0:
        raise ValueError(f"softmax_scale must be > 0 for the Hopper kernels, got {softmax_scale}")
    if causal:
        causal_offset = max(min(causal_offset, I32_MAX), -I32_MAX)
    else:
        causal_offset = 0

    variant = fwd_variant(q, causal)
    dev = _device_index(q)
    kernel = _loaded(variant, dev)
    num_m_blocks = -(-Sq // variant.block_m)
    tiles = num_m_blocks * Hq * B
    if tiles > MAX_GRID_X:
        raise ValueError(f"too many tiles for one launch: {tiles} > {MAX_GRID_X}")
    params = FWD_PARAMS.pack(
        q=tma.bshd_map(q, variant.block_m),
        k=tma.bshd_map(k, variant.block_n),
        v=tma.bshd_map(v, variant.block_n),
        o=tma.bshd_map(out, 64, box_col_blocks=1),
        lse=lse.data_ptr(),
        seqlen_q=Sq, seqlen_k=Sk, num_heads_q=Hq, head_group=Hq // Hk,
        num_m_blocks=num_m_blocks, causal_offset=causal_offset,
        scale_log2=softmax_scale * LOG2E,
    )
    # One CTA per tile (a persistent grid measured slower: benchmarks/RESULTS.md).
    launch.launch(kernel, (tiles, 1, 1), variant.threads, params, dev, launch.stream_handle(dev))
    return out, lse


def backward(dout, q, k, v, out, lse, softmax_scale: float, causal: bool, causal_offset: int,
             deterministic: bool, need_dq: bool = True, need_dkv: bool = True):
    """Attention backward on the Hopper kernels -> (dq, dk, dv), None for a gradient not needed; see
    fa3lite/hopper_bwd.py."""
    from . import hopper_bwd

    return hopper_bwd.backward(dout, q, k, v, out, lse, softmax_scale, causal, causal_offset, deterministic,
                               need_dq=need_dq, need_dkv=need_dkv)
