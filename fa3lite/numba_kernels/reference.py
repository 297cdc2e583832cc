"""Reference attention (the oracle): forward and backward as numba-cuda kernels, fp32 throughout.

Layout: q (B, Sq, Hq, D), k and v (B, Sk, Hk, D) with Hq % Hk == 0 (query head h uses kv head
h // (Hq // Hk)); out like q; lse (B, Hq, Sq), natural log. Causal: key j is visible to query i iff
j <= i + causal_offset (FlashAttention's bottom-right alignment is causal_offset = Sk - Sq, torch
SDPA's top-left is 0). Local: key j is visible to query i only if also j >= i + local_offset (with
causal, row i sees the band [i + local_offset, i + causal_offset]).

Scores: z = s = softmax_scale * q.k, or z = softcap * tanh(s / softcap) when softcap > 0. A sink is
one learnable logit per query head (sink (Hq,), in units of z) that enters every row's softmax
denominator and contributes no value: lse_i = log(sum_j exp(z_ij) + exp(sink_h)) over visible j and
out_i = sum_j exp(z_ij - lse_i) v_j. A query row with no visible key (also Sk == 0) gets out = 0 and
lse = sink_h (-inf without a sink), and contributes no gradient to q, k, v.

Inputs may be fp16, bf16 or fp32 with any strides; they are upcast to contiguous fp32 on the torch
side (exact), so the kernels compute and accumulate in fp32 and return fp32. The kernels work tile by
tile in shared memory and never store a Sq x Sk matrix. The backward recomputes P from lse, has no
atomics and is deterministic.

On a GPU the tensors must be CUDA tensors (work runs on torch's current stream); with
NUMBA_ENABLE_CUDASIM=1 set before numba is imported they must be CPU tensors (numba's simulator).
"""

from __future__ import annotations

import math

import torch

from . import _backend
from ._attention_kernels import dkv_kernel, dq_kernel, forward_kernel
from ._tiles import Tiles, default_tiles
from .aux import dot_do_o


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _as_f32(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to(torch.float32).contiguous()


def _check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, softmax_scale: float, causal_offset: int) -> None:
    _backend.check_tensor("q", q, 4)
    _backend.check_tensor("k", k, 4)
    _backend.check_tensor("v", v, 4)
    _backend.check_same_device({"q": q, "k": k, "v": v})
    if k.shape != v.shape:
        raise ValueError(f"v: expected the shape of k {tuple(k.shape)}, got {tuple(v.shape)}")
    b, _, hq, d = q.shape
    if k.shape[0] != b:
        raise ValueError(f"k: expected batch {b} (that of q), got {k.shape[0]}")
    if k.shape[3] != d:
        raise ValueError(f"k: expected head dim {d} (that of q), got {k.shape[3]}")
    if d < 1:
        raise ValueError(f"q: expected head dim >= 1, got {d}")
    hk = k.shape[2]
    if hk < 1 or hq % hk != 0:
        raise ValueError(f"k: expected a number of heads dividing q's {hq}, got {hk}")
    if not isinstance(softmax_scale, (int, float)) or not math.isfinite(softmax_scale):
        raise ValueError(f"softmax_scale: expected a finite float, got {softmax_scale!r}")
    if isinstance(causal_offset, bool) or not isinstance(causal_offset, int):
        raise TypeError(f"causal_offset: expected an int, got {type(causal_offset).__name__}")


def _check_like(name: str, t: torch.Tensor, shape: tuple[int, ...], device: torch.device) -> None:
    if tuple(t.shape) != shape:
        raise ValueError(f"{name}: expected shape {shape}, got {tuple(t.shape)}")
    if t.device != device:
        raise ValueError(f"{name}: expected device {device}, got {t.device}")


_SINK_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _check_features(q: torch.Tensor, local_offset: int, softcap: float, sink: torch.Tensor | None) -> None:
    """Validate the keyword features of attention_forward / attention_backward against q."""
    if isinstance(local_offset, bool) or not isinstance(local_offset, int):
        raise TypeError(f"local_offset: expected an int, got {type(local_offset).__name__}")
    if (
        isinstance(softcap, bool)
        or not isinstance(softcap, (int, float))
        or not math.isfinite(softcap)
        or softcap < 0
    ):
        raise ValueError(f"softcap: expected a finite float >= 0 (0 disables it), got {softcap!r}")
    if sink is not None:
        _backend.check_tensor("sink", sink, 1, _SINK_DTYPES)
        _check_like("sink", sink, (q.shape[2],), q.device)


def _sink_logits(sink: torch.Tensor | None, hq: int, device: torch.device) -> torch.Tensor:
    """fp32 (Hq,) sink logits for the forward kernel; -inf (exp(-inf) = 0, no sink) when absent."""
    if sink is None:
        return torch.full((hq,), -math.inf, dtype=torch.float32, device=device)
    return _as_f32(sink)


def _sink_grad(sink: torch.Tensor, lse: torch.Tensor, dpsum: torch.Tensor) -> torch.Tensor:
    """dsink fp32 (Hq,) from lse and dpsum (B, Hq, Sq), summed by torch in float64 (deterministic).

    d lse_i / d sink = exp(sink - lse_i), the sink's share of row i. A row whose lse is -inf (a -inf
    sink and no visible key) has no mass at all, hence no share (exp would give nan there).
    """
    lse64, dpsum64 = lse.double(), dpsum.double()
    share = torch.exp(sink.detach().double()[None, :, None] - lse64)
    share = torch.where(torch.isneginf(lse64), 0.0, share)
    return -(share * dpsum64).sum(dim=(0, 2)).to(torch.float32)


def attention_forward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    softmax_scale: float,
    causal: bool,
    causal_offset: int,
    *,
    local: bool = False,
    local_offset: int = 0,
    softcap: float = 0.0,
    sink: torch.Tensor | None = None,
    _tiles: Tiles | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Reference forward: out = softmax(z + mask, with the sink in the denominator) v per head.

    q (B, Sq, Hq, D), k and v (B, Sk, Hk, D); fp16/bf16/fp32, any strides. ``causal_offset`` is
    ignored unless ``causal``, ``local_offset`` unless ``local`` (see the module doc for the mask).
    ``softcap`` > 0 caps the scores: z = softcap * tanh(scale q.k / softcap); 0 leaves them alone.
    ``sink``: None, or (Hq,) of any float dtype (used as fp32) on q's device, one extra logit per head.
    Returns out fp32 (B, Sq, Hq, D) and lse fp32 (B, Hq, Sq) (natural log, the sink included; on rows
    with no visible key out is 0 and lse is the sink, -inf without one).
    ``_tiles`` overrides the tile geometry (tests only).
    """
    _check_qkv(q, k, v, softmax_scale, causal_offset)
    _check_features(q, local_offset, softcap, sink)
    tiles = _tiles or default_tiles()
    b, sq, hq, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    q32, k32, v32 = _as_f32(q), _as_f32(k), _as_f32(v)
    out = torch.zeros((b, sq, hq, d), dtype=torch.float32, device=q.device)
    lse = torch.full((b, hq, sq), -math.inf, dtype=torch.float32, device=q.device)
    kernel = forward_kernel(tiles, tiles.head_dim_pad(d))
    _backend.launch(
        kernel,
        (_cdiv(sq, tiles.block_rows), hq, b),
        tiles.threads,
        q.device,
        _backend.kernel_view(q32),
        _backend.kernel_view(k32),
        _backend.kernel_view(v32),
        _backend.kernel_view(_sink_logits(sink, hq, q.device)),
        _backend.kernel_view(out),
        _backend.kernel_view(lse),
        sq,
        sk,
        d,
        hq // hk,
        bool(causal),
        int(causal_offset),
        bool(local),
        int(local_offset),
        _backend.scalar_f32(softcap),
        _backend.scalar_f32(softmax_scale),
    )
    return out, lse


def attention_backward(
    dout: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    out: torch.Tensor,
    lse: torch.Tensor,
    softmax_scale: float,
    causal: bool,
    causal_offset: int,
    *,
    local: bool = False,
    local_offset: int = 0,
    softcap: float = 0.0,
    sink: torch.Tensor | None = None,
    _tiles: Tiles | None = None,
) -> tuple[torch.Tensor, ...]:
    """Reference backward of ``attention_forward``, recomputing P = exp(z - lse).

    dout and out (B, Sq, Hq, D), q (B, Sq, Hq, D), k and v (B, Sk, Hk, D), any of fp16/bf16/fp32 and any
    strides; lse fp32 (B, Hq, Sq) as the forward returned it (so it holds the sink). The mask, softcap
    and sink arguments must be those of the forward. With dpsum = rowsum(dO * out), dS = P * (dO v^T -
    dpsum) * dz/ds, dq = scale dS k and dk = scale dS^T q; the sink's gradient is
    dsink_h = -sum over b, i of exp(sink_h - lse[b, h, i]) * dpsum[b, h, i].
    Returns (dq, dk, dv) without a sink and (dq, dk, dv, dsink) with one: dq fp32 (B, Sq, Hq, D), dk
    and dv fp32 (B, Sk, Hk, D) (summed over each kv head's group), dsink fp32 (Hq,).
    ``_tiles`` overrides the tile geometry (tests only).
    """
    _check_qkv(q, k, v, softmax_scale, causal_offset)
    _check_features(q, local_offset, softcap, sink)
    _backend.check_tensor("dout", dout, 4)
    _backend.check_tensor("out", out, 4)
    _backend.check_tensor("lse", lse, 3, (torch.float32,))
    b, sq, hq, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    _check_like("dout", dout, (b, sq, hq, d), q.device)
    _check_like("out", out, (b, sq, hq, d), q.device)
    _check_like("lse", lse, (b, hq, sq), q.device)
    tiles = _tiles or default_tiles()
    dpad = tiles.head_dim_pad(d)

    q32, k32, v32, do32 = _as_f32(q), _as_f32(k), _as_f32(v), _as_f32(dout)
    lse32 = _as_f32(lse)
    dpsum = dot_do_o(do32, _as_f32(out))
    dq = torch.zeros((b, sq, hq, d), dtype=torch.float32, device=q.device)
    dk = torch.zeros((b, sk, hk, d), dtype=torch.float32, device=q.device)
    dv = torch.zeros((b, sk, hk, d), dtype=torch.float32, device=q.device)
    views = [_backend.kernel_view(t) for t in (q32, k32, v32, do32, lse32, dpsum)]
    tail = (
        d,
        hq // hk,
        bool(causal),
        int(causal_offset),
        bool(local),
        int(local_offset),
        _backend.scalar_f32(softcap),
        _backend.scalar_f32(softmax_scale),
    )
    _backend.launch(
        dq_kernel(tiles, dpad),
        (_cdiv(sq, tiles.block_rows), hq, b),
        tiles.threads,
        q.device,
        *views,
        _backend.kernel_view(dq),
        sq,
        sk,
        *tail,
    )
    _backend.launch(
        dkv_kernel(tiles, dpad),
        (_cdiv(sk, tiles.block_rows), hk, b),
        tiles.threads,
        q.device,
        *views,
        _backend.kernel_view(dk),
        _backend.kernel_view(dv),
        sq,
        sk,
        *tail,
    )
    if sink is None:
        return dq, dk, dv
    return dq, dk, dv, _sink_grad(sink, lse32, dpsum)
