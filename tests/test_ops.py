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
        "bool deterministic=False, str backend=\"auto\", SymInt? local_offset=None, float softcap=0., "
        "Tensor? sink=None) -> (Tensor, Tensor)")
    assert str(torch.ops.fa3lite.bwd.default._schema) == (
        "fa3lite::bwd(Tensor dout, Tensor q, Tensor k, Tensor v, Tensor out, Tensor lse, float softmax_scale, "
        "bool causal, SymInt causal_offset, bool deterministic=False, str backend=\"auto\", "
        "bool need_dq=True, bool need_dkv=True, SymInt? local_offset=None, float softcap=0., "
        "Tensor? sink=None) -> (Tensor, Tensor, Tensor, Tensor)")


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

    def forward(q, k, v, softmax_scale, causal, causal_offset, local_offset=None, softcap=0.0, sink=None):
        calls.append(("forward", q, k, v, softmax_scale, causal, causal_offset))
        return fallback.forward(q, k, v, softmax_scale, causal, causal_offset, local_offset, softcap, sink)

    def backward(dout, q, k, v, out, lse, softmax_scale, causal, causal_offset, deterministic, need_dq=True,
                 need_dkv=True, fwd_plan=None, local_offset=None, softcap=0.0, sink=None):
        calls.append(("backward", dout, q, k, v, out, lse, softmax_scale, causal, causal_offset, deterministic,
                      need_dq, need_dkv))
        return fallback.backward(dout, q, k, v, out, lse, softmax_scale, causal, causal_offset,
                                 need_dq=need_dq, need_dkv=need_dkv, local_offset=local_offset, softcap=softcap,
                                 sink=sink)

    module = types.SimpleNamespace(forward=forward, backward=backward)
    monkeypatch.setattr(checks, "kernel_reasons", lambda q, k, v, softmax_scale=None, softcap=0.0: [])
    monkeypatch.setattr(ops, "_hopper", lambda: module)
    return module, calls


def test_kernel_path_gets_views_and_dout_unchanged(fake_hopper):
    """The kernels' host side gets the very views; a dout the tensor maps cannot take is copied there
    (hopper_bwd's plan; test_fastpath_gpu.py checks it on the GPU), not in the op."""
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
    assert bwd_call[0] == "backward" and bwd_call[10] is True  # deterministic reaches the kernel
    assert bwd_call[1] is misaligned


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
    monkeypatch.setattr(checks, "kernel_reasons", lambda q, k, v, softmax_scale=None, softcap=0.0: [])
    monkeypatch.setattr(ops, "_hopper", lambda: None)
    monkeypatch.setattr(ops, "_hopper_error", "ImportError: no cuda.core")
    q = torch.randn(1, 3, 2, 64, dtype=torch.float16)
    with pytest.raises(fa3lite.InputError,
                       match="fa3lite.hopper: expected an importable module, got ImportError: no cuda.core"):
        fa3lite.flash_attn_func(q, q, q, backend="fa3lite")


def test_missing_backward_entry_is_a_reason(monkeypatch):
    monkeypatch.setattr(checks, "kernel_reasons", lambda q, k, v, softmax_scale=None, softcap=0.0: [])
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


# ---------------------------------------------------------------- direct calls validate (issue: hardening)

def _direct_inputs(dtype=torch.bfloat16, d=64):
    q = torch.randn(2, 5, 4, d, dtype=dtype)
    k = torch.randn(2, 7, 2, d, dtype=dtype)
    v = torch.randn(2, 7, 2, d, dtype=dtype)
    out, lse = fallback.forward(q, k, v, d ** -0.5, False, 0)
    return q, k, v, out, torch.randn_like(out), lse


# (id, (q, k, v, out, dout, lse) -> fwd args or None, -> bwd args or None, expected message parts)
_DIRECT_CASES = [
    ("k_dtype", lambda q, k, v, o, do, l: (q, k.half(), v), ["k.dtype: expected the same dtype as q"]),
    ("kv_head_dim", lambda q, k, v, o, do, l: (q, k[..., :32], v[..., :32]),
     ["k.shape[3] (head dim): expected q's head dim 64, got 32"]),
    ("hk_above_hq", lambda q, k, v, o, do, l: (q[:, :, :1], k, v),
     ["q.shape[2] (nheads_q): expected a multiple of k.shape[2] (nheads_k = 2), got 1"]),
    ("v_shape", lambda q, k, v, o, do, l: (q, k, v[:, :3]), ["v.shape: expected the same shape as k"]),
    ("rank", lambda q, k, v, o, do, l: (q[0], k, v), ["q.dim(): expected 4 dimensions"]),
]


def _fwd_args(q, k, v, scale=0.125, causal=False, offset=0, backend="auto"):
    return (q, k, v, scale, causal, offset, False, backend)


@pytest.mark.parametrize("backend", ["auto", "fa3lite", "torch"])
@pytest.mark.parametrize("build,expected", [c[1:] for c in _DIRECT_CASES], ids=[c[0] for c in _DIRECT_CASES])
def test_direct_ops_validate_like_the_api(fake_hopper, build, expected, backend):
    _, calls = fake_hopper
    q, k, v, out, dout, lse = _direct_inputs()
    bq, bk, bv = build(q, k, v, out, dout, lse)
    with pytest.raises(fa3lite.InputError) as info:
        torch.ops.fa3lite.fwd(*_fwd_args(bq, bk, bv, backend=backend))
    assert str(info.value).startswith("fa3lite::fwd: 1 problem(s):")
    assert all(part in str(info.value) for part in expected), str(info.value)
    with pytest.raises(fa3lite.InputError) as info:
        torch.ops.fa3lite.bwd(dout, bq, bk, bv, out, lse, 0.125, False, 0, False, backend)
    assert str(info.value).startswith("fa3lite::bwd:")
    assert all(part in str(info.value) for part in expected), str(info.value)
    assert not calls, "an invalid call reached the kernels"


_BWD_ONLY_CASES = [
    ("dout_shape", dict(dout=lambda t: t[:, :4]), "dout.shape: expected (2, 5, 4, 64) (from q's shape (2, 5, 4, 64)), "
                                                  "got (2, 4, 4, 64)"),
    ("dout_dtype", dict(dout=lambda t: t.half()), "dout.dtype: expected torch.bfloat16, got torch.float16"),
    ("out_shape", dict(out=lambda t: t[..., :32]), "out.shape: expected (2, 5, 4, 64)"),
    ("out_dtype", dict(out=lambda t: t.float()), "out.dtype: expected torch.bfloat16, got torch.float32"),
    ("lse_shape", dict(lse=lambda t: t[:, :, :3]), "lse.shape: expected (2, 4, 5) (from q's shape (2, 5, 4, 64)), "
                                                   "got (2, 4, 3)"),
    ("lse_dtype", dict(lse=lambda t: t.double()), "lse.dtype: expected torch.float32, got torch.float64"),
]


@pytest.mark.parametrize("change,expected", [c[1:] for c in _BWD_ONLY_CASES], ids=[c[0] for c in _BWD_ONLY_CASES])
def test_direct_bwd_checks_dout_out_and_lse(fake_hopper, change, expected):
    _, calls = fake_hopper
    q, k, v, out, dout, lse = _direct_inputs()
    args = dict(dout=dout, out=out, lse=lse)
    args.update({name: fn(args[name]) for name, fn in change.items()})
    with pytest.raises(fa3lite.InputError) as info:
        torch.ops.fa3lite.bwd(args["dout"], q, k, v, args["out"], args["lse"], 0.125, False, 0, False, "auto")
    assert expected in str(info.value)
    assert not calls


@pytest.mark.parametrize("args,expected", [
    (dict(scale=float("nan")), "softmax_scale: expected None or a finite real number, got nan"),
    (dict(scale=1e39), "softmax_scale: expected a magnitude of at most"),
    (dict(backend="cuda"), "backend: expected one of 'auto', 'fa3lite', 'torch', got 'cuda'"),
])
def test_direct_fwd_checks_scalars(fake_hopper, args, expected):
    """(Argument types -- a float for causal_offset, a number for a tensor -- are the dispatcher's to
    check against the schema; it names the argument, the expected and the given type.)"""
    q, k, v, *_ = _direct_inputs()
    with pytest.raises(fa3lite.InputError) as info:
        torch.ops.fa3lite.fwd(*_fwd_args(q, k, v, **args))
    assert expected in str(info.value)


def test_direct_ops_valid_call_still_runs(fake_hopper):
    _, calls = fake_hopper
    q, k, v, _, dout, _ = _direct_inputs()
    out, lse = torch.ops.fa3lite.fwd(*_fwd_args(q, k, v))
    dq, dk, dv, dsink = torch.ops.fa3lite.bwd(dout, q, k, v, out, lse, 0.125, False, 0, False, "auto")
    assert dsink.shape == (0,)     # no sink
    assert [c[0] for c in calls] == ["forward", "backward"]
    assert dq.shape == q.shape and dk.shape == k.shape and dv.shape == v.shape


# ---------------------------------------------------------------- only the gradients that are needed

@pytest.mark.parametrize("frozen", ["q", "kv", "k", "v", "none"])
@pytest.mark.parametrize("compiled", [False, True])
def test_backward_computes_only_needed_grads(fake_hopper, frozen, compiled):
    _, calls = fake_hopper
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(s, generator=g, dtype=torch.bfloat16) for s in ((1, 6, 4, 64), (1, 9, 2, 64), (1, 9, 2, 64)))
    q.requires_grad_("q" not in frozen)
    k.requires_grad_("k" not in frozen)
    v.requires_grad_("v" not in frozen)
    fn = lambda q, k, v: fa3lite.flash_attn_func(q, k, v, causal=True).float().square().sum()  # noqa: E731
    if compiled:
        torch._dynamo.reset()
        fn = torch.compile(fn, fullgraph=True, backend=COMPILE_BACKEND)
    loss = fn(q, k, v)
    loss.backward()
    bwd_call = [c for c in calls if c[0] == "backward"][0]
    need_dq, need_dkv = bwd_call[11], bwd_call[12]
    assert need_dq == q.requires_grad
    assert need_dkv == (k.requires_grad or v.requires_grad)
    for t in (q, k, v):
        assert (t.grad is not None) == t.requires_grad
    # the gradients that were computed equal those of a run with every input requiring grad
    full = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    want = torch.autograd.grad(fa3lite.flash_attn_func(*full, causal=True).float().square().sum(), full)
    for t, w in zip((q, k, v), want):
        if t.requires_grad:
            assert torch.equal(t.grad, w)


@pytest.mark.parametrize("need_dq,need_dkv", [(True, False), (False, True)])
def test_fallback_backward_skips_unneeded_grads(need_dq, need_dkv):
    q, k, v, out, dout, lse = _direct_inputs(torch.float32)
    full = fallback.backward(dout, q, k, v, out, lse, 0.125, True, 2)
    part = fallback.backward(dout, q, k, v, out, lse, 0.125, True, 2, need_dq=need_dq, need_dkv=need_dkv)
    for got, want, needed in zip(part, full, (need_dq, need_dkv, need_dkv)):
        assert (got is None) != needed
        if needed:
            torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    dq, dk, dv, _ = torch.ops.fa3lite.bwd(dout, q, k, v, out, lse, 0.125, True, 2, False, "torch", need_dq, need_dkv)
    assert (dq.shape == q.shape) == need_dq and (dk.numel() == 0) != need_dkv and (dv.numel() == 0) != need_dkv


# ---------------------------------------------------------------- double backward

def _ref_loss(q, k, v, causal):
    out, _ = ref_attention(q, k, v, 0.3, causal, k.shape[1] - q.shape[1])
    return out


@pytest.mark.parametrize("causal", [False, True])
def test_double_backward_is_exact_in_eager_mode(causal):
    g = torch.Generator().manual_seed(7)
    q = torch.randn(1, 4, 2, 8, generator=g, dtype=torch.float64, requires_grad=True)
    k = torch.randn(1, 5, 1, 8, generator=g, dtype=torch.float64, requires_grad=True)
    v = torch.randn(1, 5, 1, 8, generator=g, dtype=torch.float64, requires_grad=True)
    fn = lambda q, k, v: fa3lite.flash_attn_func(q, k, v, softmax_scale=0.3, causal=causal)  # noqa: E731
    assert torch.autograd.gradgradcheck(fn, (q, k, v))
    # and through the custom op, called directly
    op = lambda q, k, v: torch.ops.fa3lite.fwd(q, k, v, 0.3, causal, k.shape[1] - q.shape[1])[0]  # noqa: E731
    assert torch.autograd.gradgradcheck(op, (q, k, v))


def test_double_backward_does_not_use_the_kernels_gradients(fake_hopper):
    """The kernels' gradients carry no graph: with create_graph=True the torch math computes them, and
    second-order gradients match the float64 reference."""
    _, calls = fake_hopper
    g = torch.Generator().manual_seed(8)
    q = torch.randn(1, 6, 2, 64, generator=g, dtype=torch.float64, requires_grad=True)
    k = torch.randn(1, 7, 2, 64, generator=g, dtype=torch.float64, requires_grad=True)
    v = torch.randn(1, 7, 2, 64, generator=g, dtype=torch.float64, requires_grad=True)
    dout = torch.randn(1, 6, 2, 64, generator=g, dtype=torch.float64)
    out = fa3lite.flash_attn_func(q, k, v, softmax_scale=0.3, causal=True)
    grads = torch.autograd.grad(out, (q, k, v), dout, create_graph=True)
    assert all(t.grad_fn is not None for t in grads)
    second = torch.autograd.grad(sum(t.square().sum() for t in grads), (q, k, v))
    ref_out = _ref_loss(q, k, v, True)
    ref_grads = torch.autograd.grad(ref_out, (q, k, v), dout, create_graph=True)
    ref_second = torch.autograd.grad(sum(t.square().sum() for t in ref_grads), (q, k, v))
    for got, want in zip(second, ref_second):
        torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-9)
    assert [c[0] for c in calls].count("backward") >= 1  # first-order backward of out itself (via out)


def test_double_backward_under_compile_raises_not_drops():
    q = torch.randn(1, 4, 2, 16, requires_grad=True)
    compiled = torch.compile(lambda q: fa3lite.flash_attn_func(q, q, q), fullgraph=True, backend=COMPILE_BACKEND)
    torch._dynamo.reset()
    (dq,) = torch.autograd.grad(compiled(q).sum(), q, create_graph=True)
    with pytest.raises(RuntimeError, match="double backward"):
        dq.sum().backward()


# ---------------------------------------------------------------- runtime failures fall back (auto)

@pytest.fixture
def failing_runtime(monkeypatch, tmp_path):
    """The real fa3lite.hopper on CPU tensors, device index 0, with inputs passing kernel_reasons; each
    test makes one runtime step fail."""
    from fa3lite.hopper import bwd, fwd
    from fa3lite.runtime import cache, launch

    monkeypatch.setenv("FA3LITE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(checks, "kernel_reasons", lambda q, k, v, softmax_scale=None, softcap=0.0: [])
    monkeypatch.setattr(fwd, "device_index", lambda t: 0)
    monkeypatch.setattr(bwd, "device_index", lambda t: 0)
    cache.clear_memory_cache()
    fwd._loaded.cache_clear()
    launch.forget_failures()
    yield
    cache.clear_memory_cache()
    fwd._loaded.cache_clear()
    launch.forget_failures()


def _compile_fails(monkeypatch):
    from fa3lite.runtime import cache
    from fa3lite.runtime.compile import CompileError

    attempts = []

    def broken(spec):
        attempts.append(spec)
        raise CompileError(spec, "error: planted NVRTC failure")

    monkeypatch.setattr(cache, "compile_spec", broken)
    return attempts


def test_compile_failure_falls_back_once_and_is_remembered(failing_runtime, monkeypatch):
    attempts = _compile_fails(monkeypatch)
    q = torch.randn(1, 5, 2, 64, dtype=torch.bfloat16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outs = [fa3lite.flash_attn_func(q, q, q, causal=True) for _ in range(3)]
    fallback_warnings = [w for w in caught if issubclass(w.category, fa3lite.FallbackWarning)]
    assert len(fallback_warnings) == 1
    message = str(fallback_warnings[0].message)
    assert "planted NVRTC failure" in message and "fa3lite_fwd" in message and "FA3LITE_HEAD_DIM=64" in message
    assert len(attempts) == 1                      # remembered: no recompiling on every call
    want, _ = fallback.forward(q, q, q, 64 ** -0.5, True, 0)
    assert all(torch.equal(o, want) for o in outs)


def test_compile_failure_raises_with_backend_fa3lite(failing_runtime, monkeypatch):
    from fa3lite.runtime.launch import KernelUnavailable

    _compile_fails(monkeypatch)
    q = torch.randn(1, 5, 2, 64, dtype=torch.bfloat16)
    for _ in range(2):
        with pytest.raises(KernelUnavailable, match="planted NVRTC failure"):
            fa3lite.flash_attn_func(q, q, q, backend="fa3lite")


def test_missing_optional_import_falls_back(failing_runtime, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "cuda.bindings", None)   # `from cuda.bindings import driver` fails
    q = torch.randn(1, 5, 2, 128, dtype=torch.float16)
    with pytest.warns(fa3lite.FallbackWarning, match="ModuleNotFoundError: import of cuda.bindings"):
        out = fa3lite.flash_attn_func(q, q, q)
    assert torch.equal(out, fallback.forward(q, q, q, 128 ** -0.5, False, 0)[0])


def test_backward_runtime_failure_falls_back(failing_runtime, monkeypatch):
    """The forward ran (a stand-in), the backward kernels fail to compile: the fallback computes dq, dk, dv."""
    from fa3lite import hopper

    monkeypatch.setattr(hopper, "forward", lambda q, k, v, s, c, o, *mods: fallback.forward(q, k, v, s, c, o, *mods))
    _compile_fails(monkeypatch)
    q = torch.randn(1, 5, 2, 64, dtype=torch.bfloat16, requires_grad=True)
    with pytest.warns(fa3lite.FallbackWarning, match="fa3lite_bwd"):
        fa3lite.flash_attn_func(q, q, q).sum().backward()
    want = torch.autograd.grad(fa3lite.flash_attn_func(q, q, q, backend="torch").sum(), q)[0]
    assert torch.equal(q.grad, want)
