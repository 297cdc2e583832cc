"""The cached fast path on the GPU (issue 10): remembered call signatures (fa3lite.callkey) and cached
launch plans (fa3lite.hopper.fwd._plans) give the same results as the first, fully checked call, thousands of
times over varying shapes, dtypes and layouts, and the caches stay bounded."""
from __future__ import annotations

import itertools
import warnings

import pytest
import torch

import fa3lite
from fa3lite import callkey
from conftest import assert_close_fa3, fa3_atol, ref_attention

pytestmark = pytest.mark.gpu


def _make(layout, shape, dtype, gen):
    b, s, h, d = shape
    if layout == "contiguous":
        return torch.randn(shape, device="cuda", generator=gen).to(dtype)
    if layout == "transposed":
        return torch.randn(b, h, s, d, device="cuda", generator=gen).to(dtype).transpose(1, 2)
    return torch.randn(b, s, 3, h, d, device="cuda", generator=gen).to(dtype)[:, :, 1]   # packed qkv


def _cases():
    gen = torch.Generator(device="cuda").manual_seed(7)
    shapes = [(1, 1, 1, 2, 1), (2, 77, 130, 4, 2), (1, 128, 128, 4, 4), (2, 200, 33, 2, 1)]
    for (b, sq, sk, hq, hk), d, dtype, layout, causal in itertools.product(
            shapes, (64, 128), (torch.bfloat16, torch.float16), ("contiguous", "transposed", "packed"),
            (False, True)):
        q = _make(layout, (b, sq, hq, d), dtype, gen)
        k, v = (_make(layout, (b, sk, hk, d), dtype, gen) for _ in range(2))
        yield q, k, v, causal


def test_thousands_of_cached_calls_match_the_checked_first_call():
    from fa3lite.hopper import fwd as hopper

    callkey.forget()
    hopper._plans.clear()
    cases = []
    for q, k, v, causal in _cases():
        first = fa3lite.flash_attn_func(q, k, v, causal=causal, backend="fa3lite")
        ref, _ = ref_attention(q, k, v, None, causal, k.shape[1] - q.shape[1])
        pt, _ = ref_attention(q, k, v, None, causal, k.shape[1] - q.shape[1], dtype=q.dtype)
        assert_close_fa3(first, ref, pt, fa3_atol(ref), f"out {tuple(q.shape)} {tuple(k.shape)} {q.stride()}")
        cases.append((q, k, v, causal, first))
    assert len(callkey._passed) == len(cases)      # one signature each: layouts and dtypes never collide
    assert len(hopper._plans) == len(cases)
    calls = 0
    for _ in range(30):
        for q, k, v, causal, first in cases:
            assert torch.equal(fa3lite.flash_attn_func(q, k, v, causal=causal, backend="fa3lite"), first)
            calls += 1
    assert calls >= 2000
    assert len(callkey._passed) == len(cases) and len(hopper._plans) == len(cases)


@pytest.mark.parametrize("shape", [(2, 77, 130, 4, 2, 64), (1, 4100, 4100, 8, 8, 128), (3, 300, 1, 2, 1, 256)],
                         ids=["odd", "persistent", "one-key"])
@pytest.mark.parametrize("causal", [False, True])
def test_a_call_that_keeps_no_lse_writes_all_of_out(monkeypatch, shape, causal):
    """A repeat without autograd or return_lse launches with no LSE address (_FwdPlan.out): the kernel
    must store no LSE (a store through 0 faults) and still every element of out (NaN-poisoned here),
    bit for bit as the launch that makes lse."""
    from fa3lite.hopper import fwd as hopper

    b, sq, sk, hq, hk, d = shape
    gen = torch.Generator(device="cuda").manual_seed(sq + causal)
    q = torch.randn(b, sq, hq, d, device="cuda", generator=gen).bfloat16()
    k, v = (torch.randn(b, sk, hk, d, device="cuda", generator=gen).bfloat16() for _ in range(2))
    first, lse = fa3lite.flash_attn_func(q, k, v, causal=causal, return_lse=True, backend="fa3lite")
    fresh = hopper._FwdPlan._out
    poisoned = []

    def poisoned_out(plan, like):
        out = fresh(plan, like).fill_(float("nan"))
        poisoned.append(out)
        return out

    monkeypatch.setattr(hopper._FwdPlan, "_out", poisoned_out)
    for _ in range(2):                   # the first call checks and attaches the plan, the second runs it
        got = fa3lite.flash_attn_func(q, k, v, causal=causal, backend="fa3lite")
    torch.cuda.synchronize()
    assert len(poisoned) == 2 and got is poisoned[-1]
    assert torch.equal(got, first)
    again, again_lse = fa3lite.flash_attn_func(q, k, v, causal=causal, return_lse=True, backend="fa3lite")
    assert torch.equal(again, first) and torch.equal(again_lse, lse)


def test_cached_calls_with_gradients_repeat_bitwise():
    gen = torch.Generator(device="cuda").manual_seed(3)
    q, k, v = (_make("packed", (2, 150, 4, 128), torch.bfloat16, gen).requires_grad_() for _ in range(3))
    dout = torch.randn(2, 150, 4, 128, device="cuda", generator=gen).bfloat16()
    runs = []
    for _ in range(20):
        out = fa3lite.flash_attn_func(q, k, v, causal=True, deterministic=True, backend="fa3lite")
        runs.append((out.detach(),) + torch.autograd.grad(out, (q, k, v), dout))
    assert all(torch.equal(a, b) for run in runs[1:] for a, b in zip(run, runs[0]))


def test_a_misaligned_view_with_a_cached_shape_and_strides_is_not_taken_for_it():
    q = torch.randn(1, 64, 2, 64, device="cuda", dtype=torch.bfloat16)
    want = fa3lite.flash_attn_func(q, q, q)
    flat = torch.empty(q.numel() + 8, device="cuda", dtype=torch.bfloat16)
    misaligned = flat[1:1 + q.numel()].view(q.shape)
    misaligned.copy_(q)
    assert misaligned.stride() == q.stride() and misaligned.data_ptr() % 16
    with pytest.raises(fa3lite.InputError, match="data_ptr"):
        fa3lite.flash_attn_func(misaligned, q, q, backend="fa3lite")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fa3lite.FallbackWarning)
        got = fa3lite.flash_attn_func(misaligned, q, q)
    torch.testing.assert_close(got, want, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("layout", ["bhsd", "bshd_storage"])
@pytest.mark.parametrize("sq,sk,causal", [(100, 100, True), (100, 100, False), (37, 300, False)])
def test_sdpa_without_grad_matches_flash_bitwise(layout, sq, sk, causal):
    """The no-grad SDPA fast path (hopper.forward_bhsd, no view ops) runs the same kernel as
    flash_attn_func on the transposed views: equal bits, and out is a transposed contiguous buffer."""
    gen = torch.Generator(device="cuda").manual_seed(sq + sk)

    def make(s, h):
        if layout == "bhsd":
            return torch.randn(2, h, s, 128, device="cuda", generator=gen).bfloat16()
        return torch.randn(2, s, h, 128, device="cuda", generator=gen).bfloat16().transpose(1, 2)

    q, k, v = make(sq, 4), make(sk, 2), make(sk, 2)
    want = fa3lite.flash_attn_func(*(t.transpose(1, 2) for t in (q, k, v)), causal=causal).transpose(1, 2)
    with torch.no_grad():
        for _ in range(3):
            got = fa3lite.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
            assert torch.equal(got, want)
            assert got.shape == (2, 4, sq, 128) and got.transpose(1, 2).is_contiguous()


def test_a_misaligned_dout_through_autograd_is_copied_not_refused():
    """The backward's plan copies a dout whose address the tensor maps cannot take; the next call
    with an aligned dout of the same strides gets a plan of its own (alignment is in the key)."""
    gen = torch.Generator(device="cuda").manual_seed(11)
    q, k, v = (torch.randn(2, 96, 4, 128, device="cuda", generator=gen).bfloat16().requires_grad_()
               for _ in range(3))
    flat = torch.randn(q.numel() + 1, device="cuda", generator=gen).bfloat16()
    misaligned, aligned = flat[1:].view(q.shape), flat[:-1].view(q.shape).clone()
    misaligned_copy = misaligned.clone()
    assert misaligned.data_ptr() % 16 and misaligned.stride() == aligned.stride()
    grads = []
    for dout in (misaligned, misaligned_copy, aligned):
        out = fa3lite.flash_attn_func(q, k, v, causal=True, deterministic=True, backend="fa3lite")
        grads.append(torch.autograd.grad(out, (q, k, v), dout))
    assert all(torch.equal(a, b) for a, b in zip(grads[0], grads[1]))   # misaligned == its aligned copy
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    want = torch.autograd.grad(fa3lite.flash_attn_func(*leaves, causal=True, backend="torch"), leaves, aligned)
    for got, w in zip(grads[2], want):
        torch.testing.assert_close(got.float(), w.float(), atol=5e-2, rtol=5e-2)


def test_backward_plans_kept_per_forward_plan_follow_the_dout_layout():
    """Once a forward plan is attached, the backward finds its plan under a short key (dout's
    layout and the flags). Every dout layout -- contiguous, strided view, misaligned address -- and
    both deterministic settings, interleaved and repeated, give the bits of a contiguous dout."""
    gen = torch.Generator(device="cuda").manual_seed(12)
    q, k, v = (torch.randn(2, 130, 4, 64, device="cuda", generator=gen).bfloat16().requires_grad_()
               for _ in range(3))
    base = torch.randn(2, 130, 4, 64, device="cuda", generator=gen).bfloat16()
    strided = base.transpose(1, 2).contiguous().transpose(1, 2)
    flat = torch.empty(base.numel() + 1, device="cuda", dtype=base.dtype)
    misaligned = flat[1:].view(base.shape)
    misaligned.copy_(base)
    assert strided.stride() != base.stride() and misaligned.data_ptr() % 16

    def grads(dout, deterministic):
        out = fa3lite.flash_attn_func(q, k, v, causal=True, deterministic=deterministic, backend="fa3lite")
        return torch.autograd.grad(out, (q, k, v), dout)

    want = grads(base, True)
    for _ in range(3):
        for dout in (misaligned, base, strided):
            assert all(torch.equal(a, b) for a, b in zip(grads(dout, True), want))
            loose = grads(dout, False)        # unordered dQ additions: equal dk/dv, dq within rounding
            assert torch.equal(loose[1], want[1]) and torch.equal(loose[2], want[2])
            torch.testing.assert_close(loose[0].float(), want[0].float(), atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("heads_kv", [4, 2], ids=["mha", "gqa"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_sdpa_with_gradients_matches_flash_on_views_bitwise(causal, heads_kv):
    """The SDPA entry with autograd (torch's layout straight into the eager node, the attached
    torch-layout plan from the second call on, whose gradients are made in torch's layout) gives
    flash_attn_func's bits on the transposed views, call after call, with deterministic algorithms
    on (so dq's additions are ordered too)."""
    gen = torch.Generator(device="cuda").manual_seed(13)
    q = torch.randn(2, 4, 200, 128, device="cuda", generator=gen).bfloat16().requires_grad_()
    k, v = (torch.randn(2, heads_kv, 200, 128, device="cuda", generator=gen).bfloat16().requires_grad_()
            for _ in range(2))
    dout = torch.randn(2, 4, 200, 128, device="cuda", generator=gen).bfloat16()
    views = [t.detach().transpose(1, 2).requires_grad_() for t in (q, k, v)]
    want = fa3lite.flash_attn_func(*views, causal=causal, deterministic=True).transpose(1, 2)
    want_grads = [g.transpose(1, 2) for g in torch.autograd.grad(want, views, dout)]
    was = torch.are_deterministic_algorithms_enabled()
    try:
        torch.use_deterministic_algorithms(True)
        for _ in range(4):
            out = fa3lite.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
            assert type(out.grad_fn).__name__ in ("_EagerAttentionBackward", "_EagerAttentionOutBackward")
            assert torch.equal(out, want)
            assert all(torch.equal(a, b) for a, b in zip(torch.autograd.grad(out, (q, k, v), dout), want_grads))
    finally:
        torch.use_deterministic_algorithms(was)
