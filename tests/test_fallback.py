"""fa3lite.fallback against the float64 reference: causal alignments, Sq != Sk, GQA/MQA, fully masked
rows, Sk = 0, empty inputs, non-contiguous views, row blocking, gradients (also torch.autograd.gradcheck)."""
from __future__ import annotations

import contextlib
import math

import pytest
import torch

import fa3lite
from fa3lite import fallback
from conftest import assert_close_fa3, fa3_atol, ref_attention

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]

# (B, Sq, Sk, Hq, Hk, D, causal, causal_offset)
SHAPES = [
    (2, 7, 7, 4, 4, 16, False, 0),
    (2, 5, 9, 4, 2, 16, True, 4),      # bottom-right (flash_attn) alignment, Sq < Sk
    (1, 9, 5, 6, 3, 8, True, -4),      # bottom-right, Sq > Sk: the first 4 rows see no key
    (2, 6, 11, 4, 1, 16, True, 0),     # top-left (torch SDPA) alignment, MQA
    (1, 8, 8, 2, 2, 32, True, -3),     # rows 0..2 fully masked
    (1, 4, 6, 2, 2, 16, True, 100),    # offset beyond Sk: every key visible
]


def _inputs(shape, dtype, seed=0):
    b, sq, sk, hq, hk, d, _, _ = shape
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(b, sq, hq, d, generator=g).to(dtype), torch.randn(b, sk, hk, d, generator=g).to(dtype),
            torch.randn(b, sk, hk, d, generator=g).to(dtype))


def _ref_and_pt(q, k, v, scale, causal, offset):
    return (ref_attention(q, k, v, scale, causal, offset),
            ref_attention(q, k, v, scale, causal, offset, dtype=q.dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_forward_matches_reference(shape, dtype):
    q, k, v = _inputs(shape, dtype)
    causal, offset = shape[6], shape[7]
    scale = q.shape[-1] ** -0.5
    out, lse = fallback.forward(q, k, v, scale, causal, offset)
    assert out.dtype == dtype and out.shape == q.shape and out.is_contiguous()
    assert lse.dtype == torch.float32 and lse.shape == (q.shape[0], q.shape[2], q.shape[1]) and lse.is_contiguous()
    (out_ref, lse_ref), (out_pt, lse_pt) = _ref_and_pt(q, k, v, scale, causal, offset)
    assert_close_fa3(out, out_ref, out_pt, fa3_atol(out_ref), "out")
    # lse is float32 whatever the input, so its slack is float32's even for float64 inputs.
    assert_close_fa3(lse, lse_ref, lse_pt.float(), fa3_atol(lse_ref), "lse")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_backward_matches_reference(shape, dtype):
    q, k, v = _inputs(shape, dtype)
    causal, offset = shape[6], shape[7]
    scale = 0.3
    out, lse = fallback.forward(q, k, v, scale, causal, offset)
    dout = torch.randn(out.shape, generator=torch.Generator().manual_seed(1)).to(dtype)
    dq, dk, dv = fallback.backward(dout, q, k, v, out, lse, scale, causal, offset)
    for grad, t in ((dq, q), (dk, k), (dv, v)):
        assert grad.dtype == dtype and grad.shape == t.shape and grad.is_contiguous()
    grads = {}
    for kind, cdt in (("ref", torch.float64), ("pt", dtype)):
        leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
        o, _ = ref_attention(*leaves, scale, causal, offset, dtype=cdt)
        o.backward(dout.to(cdt))
        grads[kind] = [t.grad for t in leaves]
    for name, got, ref, pt in zip(("dq", "dk", "dv"), (dq, dk, dv), grads["ref"], grads["pt"]):
        assert_close_fa3(got, ref, pt, fa3_atol(ref), name)


def test_fully_masked_rows_are_zero_with_minus_inf_lse_and_zero_grads():
    shape = (1, 9, 5, 6, 3, 8, True, -4)
    q, k, v = _inputs(shape, torch.float32)
    out, lse = fallback.forward(q, k, v, 0.5, True, -4)
    assert torch.equal(out[:, :4], torch.zeros_like(out[:, :4]))
    assert torch.isneginf(lse[:, :, :4]).all() and torch.isfinite(lse[:, :, 4:]).all()
    assert torch.isfinite(out).all()
    dq, dk, dv = fallback.backward(torch.ones_like(out), q, k, v, out, lse, 0.5, True, -4)
    assert torch.equal(dq[:, :4], torch.zeros_like(dq[:, :4]))
    assert all(torch.isfinite(g).all() for g in (dq, dk, dv))
    assert dq[:, 4:].abs().sum() > 0


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_no_keys_gives_zero_out_minus_inf_lse_and_zero_grads(dtype):
    q, k, v = torch.randn(2, 3, 4, 8).to(dtype), torch.randn(2, 0, 2, 8).to(dtype), torch.randn(2, 0, 2, 8).to(dtype)
    for causal in (False, True):
        out, lse = fallback.forward(q, k, v, 0.1, causal, -3)
        assert torch.equal(out, torch.zeros_like(q))
        assert lse.shape == (2, 4, 3) and torch.isneginf(lse).all()
        dq, dk, dv = fallback.backward(torch.ones_like(out), q, k, v, out, lse, 0.1, causal, -3)
        assert torch.equal(dq, torch.zeros_like(q)) and dk.shape == k.shape and dv.shape == v.shape


@pytest.mark.parametrize("b,sq,sk,hq,hk", [(0, 3, 4, 2, 1), (2, 0, 4, 2, 1), (2, 3, 4, 0, 0)])
def test_empty_inputs_give_empty_outputs(b, sq, sk, hq, hk):
    q, k, v = torch.randn(b, sq, hq, 8), torch.randn(b, sk, hk, 8), torch.randn(b, sk, hk, 8)
    out, lse = fallback.forward(q, k, v, 0.1, True, sk - sq)
    assert out.shape == q.shape and lse.shape == (b, hq, sq) and lse.dtype == torch.float32
    grads = fallback.backward(torch.ones_like(out), q, k, v, out, lse, 0.1, True, sk - sq)
    assert [g.shape for g in grads] == [q.shape, k.shape, v.shape]
    assert all(torch.equal(g, torch.zeros_like(g)) for g in grads)


def test_non_contiguous_views_give_the_same_results_as_contiguous_copies():
    qkv = torch.randn(2, 6, 3, 4, 16, dtype=torch.bfloat16)  # packed (B, S, 3, H, D)
    q, k, v = qkv.unbind(2)
    bhsd = torch.randn(2, 4, 6, 16, dtype=torch.bfloat16)
    for qv in (q, bhsd.transpose(1, 2)):
        got = fallback.forward(qv, k, v, 0.25, True, 0)
        want = fallback.forward(qv.contiguous(), k.contiguous(), v.contiguous(), 0.25, True, 0)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
        dout = torch.randn(2, 4, 6, 16, dtype=torch.bfloat16).transpose(1, 2)  # non-contiguous dout
        g = fallback.backward(dout, qv, k, v, *got, 0.25, True, 0)
        w = fallback.backward(dout.contiguous(), qv.contiguous(), k.contiguous(), v.contiguous(), *want,
                              0.25, True, 0)
        assert all(torch.equal(a, b) for a, b in zip(g, w))


def test_row_blocks_bound_the_scores_and_change_nothing(monkeypatch):
    shape = (2, 9, 7, 4, 2, 16, True, -2)
    q, k, v = _inputs(shape, torch.float64)
    whole = fallback.forward(q, k, v, 0.4, True, -2)
    dout = torch.randn_like(q)
    whole_grads = fallback.backward(dout, q, k, v, *whole, 0.4, True, -2)
    # One query row per block: the scores of a block are B * Hq * Sk elements.
    monkeypatch.setattr(fallback, "_BLOCK_ELEMENTS", 1)
    assert len(fallback._row_blocks(q, k)) == 9
    blocked = fallback.forward(q, k, v, 0.4, True, -2)
    blocked_grads = fallback.backward(dout, q, k, v, *blocked, 0.4, True, -2)
    for a, b in zip((*whole, *whole_grads), (*blocked, *blocked_grads)):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", ["torch", "auto"])
@pytest.mark.parametrize("sq,sk,hq,hk,causal", [(3, 5, 2, 1, True), (5, 3, 2, 2, True), (4, 4, 4, 2, False)])
def test_gradcheck_through_flash_attn_func(backend, sq, sk, hq, hk, causal):
    g = torch.Generator().manual_seed(3)
    q = torch.randn(1, sq, hq, 4, generator=g, dtype=torch.float64, requires_grad=True)
    k = torch.randn(1, sk, hk, 4, generator=g, dtype=torch.float64, requires_grad=True)
    v = torch.randn(1, sk, hk, 4, generator=g, dtype=torch.float64, requires_grad=True)
    fa3lite.checks.reset_fallback_warnings()
    with pytest.warns(fa3lite.FallbackWarning) if backend == "auto" else contextlib.nullcontext():
        assert torch.autograd.gradcheck(
            lambda q, k, v: fa3lite.flash_attn_func(q, k, v, causal=causal, backend=backend), (q, k, v))


def test_lse_is_the_natural_log_of_the_softmax_normaliser():
    q, k, v = _inputs((1, 4, 6, 2, 2, 8, False, 0), torch.float64)
    _, lse = fallback.forward(q, k, v, 0.5, False, 0)
    scores = torch.einsum("bihd,bjhd->bhij", q, k) * 0.5
    torch.testing.assert_close(lse.double(), scores.exp().sum(-1).log(), rtol=1e-6, atol=1e-6)
    assert not math.isnan(lse.sum().item())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_autocast_is_off_inside_the_fallback(dtype):
    """Scores of ~1e6 overflow float16; the fallback's float32 math must not run in the autocast dtype."""
    g = torch.Generator().manual_seed(4)
    q = (300 * torch.randn(1, 6, 2, 16, generator=g)).requires_grad_()
    k = (300 * torch.randn(1, 6, 2, 16, generator=g)).requires_grad_()
    v = torch.randn(1, 6, 2, 16, generator=g).requires_grad_()
    want = fa3lite.flash_attn_func(q, k, v, softmax_scale=1e-3)
    want_grads = torch.autograd.grad(want.sum(), (q, k, v))
    with torch.autocast("cpu", dtype=dtype):
        got = fa3lite.flash_attn_func(q, k, v, softmax_scale=1e-3)
        got_grads = torch.autograd.grad(got.sum(), (q, k, v))
    assert got.dtype == torch.float32 and torch.isfinite(got).all()
    assert torch.equal(got, want)
    assert all(torch.equal(a, b) for a, b in zip(got_grads, want_grads))


@pytest.mark.parametrize("causal", [False, True])
def test_value_head_dim_may_differ(causal):
    # (q/k head dim, v head dim) = (12, 8): out takes v's; gradients against float64 autograd
    g = torch.Generator().manual_seed(3)
    q, k = torch.randn(2, 5, 4, 12, generator=g, dtype=torch.float64), torch.randn(2, 7, 2, 12, generator=g,
                                                                                    dtype=torch.float64)
    v = torch.randn(2, 7, 2, 8, generator=g, dtype=torch.float64)
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    out = fa3lite.flash_attn_func(*leaves, causal=causal, backend="torch")
    assert out.shape == (2, 5, 4, 8)
    s = torch.einsum("bqhd,bkhd->bhqk", q, k.repeat_interleave(2, 2)) * 12 ** -0.5
    if causal:
        s = s.masked_fill(torch.ones(5, 7, dtype=torch.bool).triu(7 - 5 + 1), float("-inf"))
    want = torch.einsum("bhqk,bkhd->bqhd", s.softmax(-1), v.repeat_interleave(2, 2))
    torch.testing.assert_close(out, want)
    assert torch.autograd.gradcheck(lambda q, k, v: fa3lite.flash_attn_func(q, k, v, causal=causal, backend="torch"),
                                    tuple(leaves))
