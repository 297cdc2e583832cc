"""Tensors of one decode case (decode_cases.DecodeCase): the cache in its layout, the page table,
the queries, and the fp32 reference the checks compare against.

A paged cache holds exactly the pages the batch needs (B * pages_per_seq of them), handed out by a
shuffled page table, so consecutive pages of a sequence are never neighbours in memory: a kernel
that assumed they were would read another sequence's rows and fail the check.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .decode_cases import DecodeCase
from .reference import TORCH_DTYPES, masked_attention_math, no_tf32, visible_mask


@dataclass(frozen=True)
class DecodeInputs:
    """One call's inputs.

    q: (B, Sq, Hq, d). k_cache, v_cache: (B, L, Hk, d), or (B * pages, page_size, Hk, d) with
    page_table (B, pages) int32. cache_seqlens: (B,) int32, L in every row (the rows to attend to).
    k_new, v_new: (B, Sq, Hk, d), the rows an appending call writes at positions L - Sq .. L - 1
    (append_at: (B,) int32, L - Sq), equal to what the cache already holds there, so appending them
    leaves the cache's values unchanged.
    """

    q: torch.Tensor
    k_cache: torch.Tensor
    v_cache: torch.Tensor
    page_table: torch.Tensor | None
    cache_seqlens: torch.Tensor
    k_new: torch.Tensor
    v_new: torch.Tensor
    append_at: torch.Tensor


def shuffled_page_table(batch: int, pages_per_seq: int, generator: torch.Generator, device) -> torch.Tensor:
    """(batch, pages_per_seq) int32: a random permutation of 0 .. batch * pages_per_seq - 1, so every
    page of the pool is used exactly once."""
    if batch <= 0 or pages_per_seq <= 0:
        raise ValueError(f"batch, pages_per_seq: expected positive counts, got {batch}, {pages_per_seq}")
    order = torch.randperm(batch * pages_per_seq, generator=generator, device=generator.device)
    return order.to(device=device, dtype=torch.int32).view(batch, pages_per_seq)


def row_indices(case: DecodeCase, page_table: torch.Tensor | None, positions: torch.Tensor) -> torch.Tensor:
    """Flat row numbers (B, n) int64 in the cache viewed as (rows, Hk, d) of positions (n,) of every
    batch row: b * L + pos contiguous, page_table[b, pos // p] * p + pos % p paged."""
    device = positions.device
    batch = torch.arange(case.batch, device=device)[:, None]
    if page_table is None:
        return batch * case.cache_len + positions[None, :]
    pages = page_table.to(device=device, dtype=torch.int64)
    return pages[batch, positions[None, :] // case.page_size] * case.page_size + positions[None, :] % case.page_size


def logical_kv(case: DecodeCase, cache: torch.Tensor, page_table: torch.Tensor | None) -> torch.Tensor:
    """The cache's rows of every batch row in order: (B, L, Hk, d), a view when contiguous, else a
    gather of the pages (a copy)."""
    if page_table is None:
        return cache[:, :case.cache_len]
    return cache[page_table.to(torch.int64)].flatten(1, 2)[:, :case.cache_len]


def make_inputs(case: DecodeCase, device, generator: torch.Generator) -> DecodeInputs:
    """Random (standard normal) inputs of the case in its layout."""
    dtype = TORCH_DTYPES[case.dtype]

    def randn(*shape):
        # Drawn in the cache's dtype: an fp32 draw of the largest case (2 x 17 GB of bf16) would not fit.
        return torch.randn(shape, generator=generator, device=generator.device, dtype=dtype).to(device)

    hk, d = case.heads_kv, case.head_dim
    table = None
    if case.paged:
        table = shuffled_page_table(case.batch, case.pages_per_seq, generator, device)
        rows = (case.batch * case.pages_per_seq, case.page_size)
    else:
        rows = (case.batch, case.cache_len)
    k_cache, v_cache = randn(*rows, hk, d), randn(*rows, hk, d)
    tail = torch.arange(case.cache_len - case.sq, case.cache_len, device=device)
    flat = row_indices(case, table, tail)

    def new_rows(cache):
        return cache.view(-1, hk, d)[flat.flatten()].view(case.batch, case.sq, hk, d)

    seqlens = torch.full((case.batch,), case.cache_len, dtype=torch.int32, device=device)
    return DecodeInputs(randn(case.batch, case.sq, case.heads_q, d), k_cache, v_cache, table, seqlens,
                        new_rows(k_cache), new_rows(v_cache), seqlens - case.sq)


def with_stale_tail(case: DecodeCase, inputs: DecodeInputs) -> DecodeInputs:
    """A copy of inputs whose caches hold zeros where the appended rows go: an appending call that
    does not write them (or writes them elsewhere) then gives a wrong answer."""
    flat = row_indices(case, inputs.page_table,
                       torch.arange(case.cache_len - case.sq, case.cache_len, device=inputs.q.device)).flatten()
    caches = []
    for cache in (inputs.k_cache, inputs.v_cache):
        stale = cache.clone()
        stale.view(-1, *cache.shape[2:])[flat] = 0
        caches.append(stale)
    return DecodeInputs(inputs.q, caches[0], caches[1], inputs.page_table, inputs.cache_seqlens, inputs.k_new,
                        inputs.v_new, inputs.append_at)


def decode_reference(case: DecodeCase, inputs: DecodeInputs, dtype=torch.float32) -> torch.Tensor:
    """Attention of q over each batch row's L cached rows in `dtype`, causal bottom-right (query i
    sees keys 0 .. L - Sq + i), query head h reading K/V head h // (Hq / Hk): (B, Sq, Hq, d) float32."""
    group = case.heads_q // case.heads_kv
    q = inputs.q.to(dtype).transpose(1, 2)                      # (B, Hq, Sq, d)
    k, v = (logical_kv(case, c, inputs.page_table).to(dtype).transpose(1, 2).repeat_interleave(group, dim=1)
            for c in (inputs.k_cache, inputs.v_cache))          # (B, Hq, L, d)
    visible = visible_mask(case.sq, case.cache_len, True, device=q.device)
    with no_tf32():
        out = masked_attention_math(q, k, v, case.head_dim ** -0.5, visible)
    return out.transpose(1, 2).float()
