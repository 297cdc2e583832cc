"""Custom ops fa3lite::fwd / fa3lite::bwd: schema, opcheck, the kernel/fallback dispatch inside the op,
and torch.compile(fullgraph=True) of both public functions, forward and backward."""
from __future__ import annotations

import types
import warnings

import pytest
import torch

import fa3lite
from fa3lite import checks, fallback, ops
from conftest import assert_close_fa3, fa3_atol, ref_attention

# aot_eager traces the same graphs as inductor (dynamo + AOTAutograd with the fakes) without codegen:
# ~1 s a compile on 2 cores, against ~16 s for inductor's first (cold) compile. One inductor test below.
COMPILE_BACKEND = "aot_eager"


@pytest.fixture(autouse=True)
def _quiet_fallback():
    checks.reset_fallback_warnings()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fa3lite.FallbackWarning)
        yield


def test_schemas():
    assert str(torch.ops.fa3lite.fwd.default._schema) == (
        "fa3lite::fwd(Tensor q, Tensor k, Tensor v, float softmax_scale, bool causal, SymInt causal_offset, "
        "bool deterministic=False, str backend=\"auto\") -> (Tensor, Tensor)")
    assert str(torch.ops.fa3lite.bwd.default._schema) == (
        "fa3lite::bwd(Tensor dout, Tensor q, Tensor k, Tensor v, Tensor out, Tensor lse, float softmax_scale, "
        "bool causal, SymInt causal_offset, bool deterministic=False, str backend=\"auto\") "
        "-> (Tensor, Tensor, Tensor)")


def _fwd_samples():
    g = torch.Generator().manual_seed(0)
    r = lambda *s, dtype=torch.float32: torch.randn(*s, generator=g).to(dtype).requires_grad_()  # noqa: E731
    qkv = torch.randn(2, 6, 3, 4, 16, generator=g)
    packed = [t.requires_grad_() for t in qkv.unbind(2)]  # non-contiguous views
    return {
        "causal_bottom_right_gqa": (r(2, 5, 4, 16), r(2, 7, 2, 16), r(2, 7, 2, 16), 0.25, True, 2),
        "non_causal_mqa_bf16": (r(1, 4, 4, 16, dtype=torch.bfloat16), r(1, 3, 1, 16, dtype=torch.bfloat16),
                                r(1, 3, 1, 16, dtype=torch.bfloat16), 0.5, False, 0),
        "fully_masked_rows": (r(1, 6, 2, 8), r(1, 3, 2, 8), r(1, 3, 2, 8), 0.3, True, -3),
        "packed_views": (*packed, 0.25, True, 0),
        "transposed_views": (r(1, 2, 5, 16).transpose(1, 2), r(1, 2, 5, 16).transpose(1, 2),
                             r(1, 2, 5, 16).transpose(1, 2), 0.25, False, 0),
        "no_keys": (r(1, 3, 2, 8), r(1, 0, 2, 8), r(1, 0, 2, 8), 0.3, False, 0),
    }


@pytest.mark.parametrize("backend", ["auto", "torch"])
@pytest.mark.parametrize("case", list(_fwd_samples()))
def test_opcheck_fwd(case, backend):
    q, k, v, scale, causal, offset = _fwd_samples()[case]
    torch.library.opcheck(torch.ops.fa3lite.fwd.default, (q, k, v, scale, causal, offset, False, backend))


@pytest.mark.parametrize("case", list(_fwd_samples()))
def test_opcheck_bwd(case):
    q, k, v, scale, causal, offset = (t.detach() if isinstance(t, torch.Tensor) else t
                                      for t in _fwd_samples()[case])
    out, lse = torch.ops.fa3lite.fwd(q, k, v, scale, causal, offset)
    dout = torch.randn(out.shape[0], out.shape[2], out.shape[1], out.shape[3]).to(q.dtype).transpose(1, 2)
    torch.library.opcheck(torch.ops.fa3lite.bwd.default,
                          (dout, q, k, v, out, lse, scale, causal, offset, True, "auto"))


def test_op_backend_fa3lite_raises_inside_the_op():
    q = torch.randn(1, 3, 2, 64, dtype=torch.float16)
    with pytest.raises(fa3lite.InputError, match="q.device: expected a CUDA device"):
        torch.ops.fa3lite.fwd(q, q, q, 0.125, False, 0, False, "fa3lite")
    with pytest.raises(fa3lite.InputError, match="backend: expected one of 'auto', 'fa3lite', 'torch', got 'x'"):
        torch.ops.fa3lite.bwd(q, q, q, q, q, q[:, :, :, 0].float(), 0.125, False, 0, False, "x")


# ---------------------------------------------------------------- dispatch to the kernels (CPU stand-in)

@pytest.fixture
def fake_hopper(monkeypatch):
    """Pretend the inputs suit the kernels and route them to a stand-in fa3lite.hopper that records its
    arguments and computes with the fallback."""
    calls = []

    def forward(q, k, v, softmax_scale, causal, causal_offset):
        calls.append(("forward", q, k, v, softmax_scale, causal, causal_offset))
        return fallback.forward(q, k, v, softmax_scale, causal, causal_offset)

    def backward(dout, q, k, v, out, lse, softmax_scale, causal, causal_offset, deterministic):
        calls.append(("backward", dout, q, k, v, out, lse, softmax_scale, causal, causal_offset, deterministic))
        return fallback.backward(dout, q, k, v, out, lse, softmax_scale, causal, causal_offset)

    module = types.SimpleNamespace(forward=forward, backward=backward)
    monkeypatch.setattr(checks, "kernel_reasons", lambda q, k, v, softmax_scale=None: [])
    monkeypatch.setattr(ops, "_hopper", lambda: module)
    return module, calls


def test_kernel_path_gets_views_unchanged_and_a_contiguous_dout(fake_hopper):
    _, calls = fake_hopper
    qkv = torch.randn(2, 6, 3, 4, 64, dtype=torch.bfloat16)
    q, k, v = (t.requires_grad_() for t in qkv.unbind(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error", fa3lite.FallbackWarning)  # the kernel path must not warn
        out = fa3lite.flash_attn_func(q, k, v, causal=True, deterministic=True, backend="fa3lite")
    name, kq, kk, kv, scale, causal, offset = calls[0]
    assert name == "forward" and (kq, kk, kv) == (q, k, v)  # the very views, no copies
    assert scale == 64 ** -0.5 and causal is True and offset == 0
    dout = torch.randn(2, 4, 6, 64, dtype=torch.bfloat16).transpose(1, 2)[..., :64]
    misaligned = torch.randn(dout.numel() + 1, dtype=torch.bfloat16)[1:].view(dout.shape)
    misaligned.copy_(dout)
    out.backward(misaligned)
    bwd_call = calls[1]
    assert bwd_call[0] == "backward" and bwd_call[-1] is True  # deterministic reaches the kernel
    kernel_dout = bwd_call[1]
    assert kernel_dout.is_contiguous() and checks.layout_reasons("dout", kernel_dout) == []
    assert torch.equal(kernel_dout, dout)


def test_kernel_path_keeps_a_well_laid_out_dout(fake_hopper):
    _, calls = fake_hopper
    q = torch.randn(1, 4, 2, 64, dtype=torch.float16, requires_grad=True)
    out = fa3lite.flash_attn_func(q, q, q)
    dout = torch.randn(1, 2, 4, 64, dtype=torch.float16).transpose(1, 2)  # non-contiguous, aligned
    out.backward(dout)
    assert calls[1][1] is dout


def test_empty_inputs_never_reach_the_kernels(fake_hopper):
    _, calls = fake_hopper
    q = torch.randn(1, 3, 2, 64, dtype=torch.float16)
    out, lse = fa3lite.flash_attn_func(q, q[:, :0], q[:, :0], return_lse=True, backend="fa3lite")
    assert not calls and torch.equal(out, torch.zeros_like(q)) and torch.isneginf(lse).all()


def test_missing_hopper_module_is_a_reason(monkeypatch):
    monkeypatch.setattr(checks, "kernel_reasons", lambda q, k, v, softmax_scale=None: [])
    monkeypatch.setattr(ops, "_hopper", lambda: None)
    monkeypatch.setattr(ops, "_hopper_error", "ImportError: no cuda.core")
    q = torch.randn(1, 3, 2, 64, dtype=torch.float16)
    with pytest.raises(fa3lite.InputError,
                       match="fa3lite.hopper: expected an importable module, got ImportError: no cuda.core"):
        fa3lite.flash_attn_func(q, q, q, backend="fa3lite")


def test_missing_backward_entry_is_a_reason(monkeypatch):
    monkeypatch.setattr(checks, "kernel_reasons", lambda q, k, v, softmax_scale=None: [])
    monkeypatch.setattr(ops, "_hopper", lambda: types.SimpleNamespace(forward=fallback.forward))
    q = torch.randn(1, 3, 2, 64, dtype=torch.float16, requires_grad=True)
    out = fa3lite.flash_attn_func(q, q, q, backend="fa3lite")
    with pytest.raises(fa3lite.InputError, match="fa3lite.hopper.backward: expected a function"):
        out.sum().backward()


# ---------------------------------------------------------------- torch.compile(fullgraph=True)

def _flash(q, k, v):
    out, lse = fa3lite.flash_attn_func(q, k, v, causal=True, return_lse=True)
    return out.float().square().sum() + lse.sum().detach()


def _sdpa(q, k, v):
    return fa3lite.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True).float().square().sum()


def _compiled_matches_eager(fn, shapes, dynamic, backend=COMPILE_BACKEND):
    torch._dynamo.reset()
    compiled = torch.compile(fn, fullgraph=True, backend=backend, dynamic=dynamic)
    for q_shape, kv_shape in shapes:
        g = torch.Generator().manual_seed(sum(q_shape))
        q = torch.randn(q_shape, generator=g, dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(kv_shape, generator=g, dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn(kv_shape, generator=g, dtype=torch.bfloat16, requires_grad=True)
        loss = compiled(q, k, v)
        grads = torch.autograd.grad(loss, (q, k, v))
        want_loss = fn(q, k, v)
        want = torch.autograd.grad(want_loss, (q, k, v))
        if backend == "inductor":  # inductor fuses the loss around the op: rounding differs there
            torch.testing.assert_close(loss, want_loss)
            torch.testing.assert_close(grads, want)
        else:
            assert torch.equal(loss, want_loss)
            assert all(torch.equal(a, b) for a, b in zip(grads, want))


@pytest.mark.parametrize("dynamic", [False, True])
def test_compile_flash_attn_func_fwd_bwd(dynamic):
    # Sq != Sk changes causal_offset = Sk - Sq: a SymInt under dynamic shapes.
    _compiled_matches_eager(_flash, [((2, 5, 4, 64), (2, 7, 2, 64)), ((2, 9, 4, 64), (2, 6, 2, 64))], dynamic)


@pytest.mark.parametrize("dynamic", [False, True])
def test_compile_sdpa_fwd_bwd(dynamic):
    _compiled_matches_eager(_sdpa, [((2, 4, 5, 64), (2, 2, 7, 64)), ((1, 4, 8, 64), (1, 2, 3, 64))], dynamic)


def test_compile_sdpa_hand_off_to_torch_has_no_graph_break():
    def masked(q, k, v, mask):
        return fa3lite.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    q = torch.randn(1, 2, 5, 16)
    mask = torch.rand(5, 5) > 0.3
    torch._dynamo.reset()
    got = torch.compile(masked, fullgraph=True, backend=COMPILE_BACKEND)(q, q, q, mask)
    assert torch.equal(got, torch.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=mask))


def test_compile_backend_fa3lite_raises_at_run_time():
    def strict(q, k, v):
        return fa3lite.flash_attn_func(q, k, v, backend="fa3lite")

    q = torch.randn(1, 3, 2, 64, dtype=torch.float16)
    torch._dynamo.reset()
    with pytest.raises(fa3lite.InputError, match="q.device: expected a CUDA device"):
        torch.compile(strict, fullgraph=True, backend=COMPILE_BACKEND)(q, q, q)


def test_compile_inductor_flash_attn_func_fwd_bwd():
    _compiled_matches_eager(_flash, [((1, 5, 2, 64), (1, 7, 1, 64))], dynamic=False, backend="inductor")


# ---------------------------------------------------------------- GPU

@pytest.mark.gpu
@pytest.mark.parametrize("fn", [_flash, _sdpa])
def test_gpu_compile_inductor_fullgraph(fn):
    torch._dynamo.reset()
    compiled = torch.compile(fn, fullgraph=True)
    layout_bshd = fn is _flash
    q_shape, kv_shape = ((2, 300, 8, 128), (2, 333, 2, 128))
    if not layout_bshd:
        q_shape, kv_shape = ((2, 8, 300, 128), (2, 2, 333, 128))
    q = torch.randn(q_shape, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(kv_shape, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(kv_shape, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", fa3lite.FallbackWarning)  # these inputs must run on the kernels
        loss = compiled(q, k, v)
        grads = torch.autograd.grad(loss, (q, k, v))
        want = torch.autograd.grad(fn(q, k, v), (q, k, v))
    for name, got, ref in zip(("dq", "dk", "dv"), grads, want):
        torch.testing.assert_close(got, ref, rtol=0, atol=0, msg=name)


@pytest.mark.gpu
def test_gpu_opcheck():
    q = torch.randn(1, 130, 4, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(1, 150, 2, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(1, 150, 2, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    torch.library.opcheck(torch.ops.fa3lite.fwd.default, (q, k, v, 0.125, True, 20, False, "fa3lite"))
    out, lse = torch.ops.fa3lite.fwd(q.detach(), k.detach(), v.detach(), 0.125, True, 20, False, "fa3lite")
    ref, _ = ref_attention(q, k, v, 0.125, True, 20)
    pt, _ = ref_attention(q, k, v, 0.125, True, 20, dtype=q.dtype)
    assert_close_fa3(out, ref, pt, fa3_atol(ref), "out")
    dout = torch.randn_like(out)
    torch.library.opcheck(torch.ops.fa3lite.bwd.default,
                          (dout, q.detach(), k.detach(), v.detach(), out, lse, 0.125, True, 20, False, "fa3lite"))
