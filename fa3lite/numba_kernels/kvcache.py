"""Reference attention over a KV cache (the oracle of flash_attn_with_kvcache), a numba-cuda kernel,
fp32 throughout, written apart from fa3lite's own host code (it shares none of its index maths).

kvcache_attention(q, k_cache, v_cache, cache_seqlens, *, page_table, cache_batch_idx, cache_leftpad,
                  softmax_scale, causal, window_size, softcap) -> (out (B, Sq, Hq, Dv), lse (B, Hq, Sq))

Sequence b's keys are cache positions leftpad[b] .. seqlens[b] - 1 (n_b of them) of cache row
batch_idx[b] (contiguous cache (B_cache, S_cache, Hk, D)), or of the pages page_table[b] names
(paged cache (num_pages, page_size, Hk, D): position p is row p % page_size of page
page_table[b, p // page_size]). Query i of Sq sits at key index n_b - Sq + i (bottom-right) and sees
key j iff (not causal or j <= that) and, for window_size (left, right), that - left <= j <= that +
right (-1: unbounded). Query head h reads K/V head h // (Hq / Hk). Scores scale * q.k, or softcap *
tanh(scale * q.k / softcap). A row with no visible key gets out 0 and lse -inf. Nothing is appended:
the caller writes new rows into the cache first. No cache row outside a sequence's range is read, so
NaN there cannot reach a result.

Same device rules as the other reference kernels: CUDA tensors on a GPU, CPU tensors under
NUMBA_ENABLE_CUDASIM=1. Inputs are upcast to contiguous fp32 by torch first (exact).
"""

from __future__ import annotations

import functools
import math

import numba.cuda as ncuda
import numpy as np
import torch

from . import _backend

_LANES = 32   # threads per query row: they stride over the keys, then over the output columns


@functools.lru_cache(maxsize=None)
def _kernel():
    neg_inf = np.float32(-np.inf)

    @ncuda.jit
    def kvcache_kernel(q, k, v, seqlens, batch_idx, leftpad, page_table, out, lse, scores, hq, hk, sq, paged,
                       scale, causal, left, right, softcap):
        row = ncuda.blockIdx.x               # ((b * Hq) + h) * Sq + i
        t = ncuda.threadIdx.x
        i = row % sq
        h = (row // sq) % hq
        b = row // (sq * hq)
        g = h // (hq // hk)
        start = leftpad[b]
        n = seqlens[b] - start
        if n < 0:
            n = 0
        diag = n - sq + i                     # the query's own key index (bottom-right)
        d = q.shape[3]
        dv = v.shape[3]
        shared = ncuda.shared.array(_LANES, np.float32)

        m = neg_inf
        for j in range(t, n, _LANES):
            visible = (not causal or j <= diag) and (left < 0 or j >= diag - left) and (right < 0 or j <= diag + right)
            s = neg_inf
            if visible:
                pos = start + j
                acc = np.float32(0.0)
                for c in range(d):
                    if paged:
                        kc = k[page_table[b, pos // k.shape[1]], pos % k.shape[1], g, c]
                    else:
                        kc = k[batch_idx[b], pos, g, c]
                    acc += q[b, i, h, c] * kc
                s = acc * scale
                if softcap > 0:
                    s = softcap * math.tanh(s / softcap)
            scores[row, j] = s
            if s > m:
                m = s
        shared[t] = m
        ncuda.syncthreads()
        if t == 0:
            for u in range(1, _LANES):
                if shared[u] > shared[0]:
                    shared[0] = shared[u]
        ncuda.syncthreads()
        m = shared[0]
        ncuda.syncthreads()

        total = np.float32(0.0)
        if m != neg_inf:
            for j in range(t, n, _LANES):
                s = scores[row, j]
                if s != neg_inf:
                    total += math.exp(s - m)
        shared[t] = total
        ncuda.syncthreads()
        if t == 0:
            for u in range(1, _LANES):
                shared[0] += shared[u]
        ncuda.syncthreads()
        total = shared[0]

        for c in range(t, dv, _LANES):
            acc = np.float32(0.0)
            if total > 0:
                for j in range(n):
                    s = scores[row, j]
                    if s != neg_inf:
                        pos = start + j
                        if paged:
                            vc = v[page_table[b, pos // v.shape[1]], pos % v.shape[1], g, c]
                        else:
                            vc = v[batch_idx[b], pos, g, c]
                        acc += math.exp(s - m) * vc
                acc = acc / total
            out[b, i, h, c] = acc
        if t == 0:
            lse[b, h, i] = m + math.log(total) if total > 0 else neg_inf

    return kvcache_kernel


def _index(t: torch.Tensor | None, b: int, fill: int, name: str, device) -> torch.Tensor:
    if t is None:
        return torch.full((b,), fill, dtype=torch.int32, device=device) if fill >= 0 else \
            torch.arange(b, dtype=torch.int32, device=device)
    if t.shape != (b,):
        raise ValueError(f"{name}: expected shape ({b},), got {tuple(t.shape)}")
    return t.to(device=device, dtype=torch.int32).contiguous()


def kvcache_attention(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, cache_seqlens: torch.Tensor, *,
                      page_table: torch.Tensor | None = None, cache_batch_idx: torch.Tensor | None = None,
                      cache_leftpad: torch.Tensor | None = None, softmax_scale: float | None = None,
                      causal: bool = False, window_size=(-1, -1), softcap: float = 0.0):
    """(out fp32 (B, Sq, Hq, Dv), lse fp32 (B, Hq, Sq)); see the module docstring for the semantics.
    cache_seqlens: (B,) ints, where each sequence's cache ends (the append already written)."""
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)):
        _backend.check_tensor(name, t, 4)
    device = _backend.check_same_device({"q": q, "k_cache": k_cache, "v_cache": v_cache})
    b, sq, hq, d = q.shape
    hk = k_cache.shape[2]
    if hk < 1 or hq % hk or k_cache.shape[3] != d or k_cache.shape[:3] != v_cache.shape[:3]:
        raise ValueError(f"k_cache/v_cache: expected (.., .., Hk, {d}) / (.., .., Hk, Dv) with Hk dividing {hq}, got "
                         f"{tuple(k_cache.shape)} / {tuple(v_cache.shape)}")
    if page_table is not None and (cache_batch_idx is not None or cache_leftpad is not None):
        raise ValueError("page_table: expected no cache_batch_idx or cache_leftpad with it")
    capacity = page_table.shape[1] * k_cache.shape[1] if page_table is not None else k_cache.shape[1]
    scale = d ** -0.5 if softmax_scale is None else float(softmax_scale)
    seqlens = _index(cache_seqlens, b, 0, "cache_seqlens", device)
    batch_idx = _index(cache_batch_idx, b, -1, "cache_batch_idx", device)
    leftpad = _index(cache_leftpad, b, 0, "cache_leftpad", device)
    table = (page_table.to(device=device, dtype=torch.int32).contiguous() if page_table is not None
             else torch.zeros((1, 1), dtype=torch.int32, device=device))
    out = torch.zeros((b, sq, hq, v_cache.shape[3]), dtype=torch.float32, device=device)
    lse = torch.full((b, hq, sq), -math.inf, dtype=torch.float32, device=device)
    scores = torch.empty((b * hq * sq, max(capacity, 1)), dtype=torch.float32, device=device)
    left, right = (int(w) for w in window_size)
    f32 = [t.detach().to(torch.float32).contiguous() for t in (q, k_cache, v_cache)]
    views = [_backend.kernel_view(t) for t in (*f32, seqlens, batch_idx, leftpad, table)]
    targets = [_backend.writable_target(t) for t in (out, lse, scores)]
    _backend.launch(_kernel(), (b * hq * sq,), _LANES, device, *views, *(_backend.kernel_view(t) for t in targets),
                    hq, hk, sq, page_table is not None, _backend.scalar_f32(scale), bool(causal), left, right,
                    _backend.scalar_f32(softcap))
    for t, target in zip((out, lse), targets[:2]):
        _backend.commit(t, target)
    return out, lse
