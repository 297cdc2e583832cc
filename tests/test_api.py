"""Public API: flash_attn_func semantics, backend choice and its one-time warning, and
scaled_dot_product_attention as a drop-in for torch.nn.functional.scaled_dot_product_attention.
GPU tests (marked gpu) run the Hopper kernels (backend="fa3lite") against the float64 reference."""
from __future__ import annotations

import itertools
import subprocess
import sys
import warnings

import pytest
import torch
import torch.nn.functional as F

import fa3lite
from fa3lite import checks, ops
from conftest import assert_close_fa3, fa3_atol, ref_attention


@pytest.fixture(autouse=True)
def _fresh_warnings():
    checks.reset_fallback_warnings()
    yield
    checks.reset_fallback_warnings()


def _rand(*shape, dtype=torch.float32, device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype=dtype, device=device)


# ---------------------------------------------------------------- package surface

def test_public_names_and_a_light_import():
    assert sorted(fa3lite.__all__) == sorted(["flash_attn_func", "flash_attn_varlen_func", "flash_attn_with_kvcache",
                                              "scaled_dot_product_attention", "kernel_info",
                                              "InputError", "FallbackWarning", "KernelUnavailable", "CacheWarning",
                                              "__version__"])
    assert all(hasattr(fa3lite, name) for name in fa3lite.__all__)
    # Importing fa3lite registers the ops but loads neither the kernels' host code nor CUDA libraries.
    code = ("import sys, torch; before = set(sys.modules); import fa3lite; "
            "assert hasattr(torch.ops.fa3lite, 'fwd'); "
            "print(sorted(m for m in set(sys.modules) - before "
            "if m.startswith(('fa3lite.hopper', 'fa3lite.runtime', 'cuda', 'numba'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


# ---------------------------------------------------------------- flash_attn_func (CPU)

def test_flash_attn_func_outputs_and_defaults():
    q, k, v = _rand(2, 5, 4, 16), _rand(2, 7, 2, 16, seed=1), _rand(2, 7, 2, 16, seed=2)
    out = fa3lite.flash_attn_func(q, k, v, backend="torch")
    out2, lse = fa3lite.flash_attn_func(q, k, v, return_lse=True, backend="torch")
    assert isinstance(out, torch.Tensor) and torch.equal(out, out2)
    assert out.shape == q.shape and out.dtype == q.dtype and out.is_contiguous()
    assert lse.shape == (2, 4, 5) and lse.dtype == torch.float32
    explicit = fa3lite.flash_attn_func(q, k, v, softmax_scale=16 ** -0.5, backend="torch")
    assert torch.equal(out, explicit)  # default scale is D ** -0.5
    other = fa3lite.flash_attn_func(q, k, v, softmax_scale=1.0, backend="torch")
    assert not torch.allclose(out, other)


def test_flash_attn_func_causal_is_bottom_right_aligned():
    q, k, v = _rand(1, 3, 2, 8, dtype=torch.float64), _rand(1, 6, 2, 8, dtype=torch.float64, seed=1), \
        _rand(1, 6, 2, 8, dtype=torch.float64, seed=2)
    out, lse = fa3lite.flash_attn_func(q, k, v, causal=True, return_lse=True, backend="torch")
    bottom_right, lse_br = ref_attention(q, k, v, causal=True, causal_offset=3)
    top_left, _ = ref_attention(q, k, v, causal=True, causal_offset=0)
    torch.testing.assert_close(out, bottom_right)
    torch.testing.assert_close(lse, lse_br.float())
    assert not torch.allclose(out, top_left)


def test_flash_attn_func_int_scale_and_float64():
    q = _rand(1, 4, 2, 8, dtype=torch.float64)
    out = fa3lite.flash_attn_func(q, q, q, softmax_scale=1, backend="torch")
    torch.testing.assert_close(out, ref_attention(q, q, q, scale=1.0)[0])


def test_lse_carries_no_gradient_and_out_does():
    q, k, v = (_rand(1, 4, 2, 8, seed=s).requires_grad_() for s in range(3))
    out, lse = fa3lite.flash_attn_func(q, k, v, return_lse=True, backend="torch")
    assert out.requires_grad and not lse.requires_grad
    out.sum().backward()
    assert q.grad is not None and k.grad is not None and v.grad is not None


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
def test_auto_on_cpu_equals_torch_backend_bitwise(dtype):
    q, k, v = (_rand(2, 6, 4, 64, dtype=dtype, seed=s).requires_grad_() for s in range(3))
    grads = []
    for backend in ("auto", "torch"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fa3lite.FallbackWarning)
            out, lse = fa3lite.flash_attn_func(q, k, v, causal=True, return_lse=True, backend=backend)
        (dq, dk, dv) = torch.autograd.grad(out, (q, k, v), torch.ones_like(out))
        grads.append((out, lse, dq, dk, dv))
    assert all(torch.equal(a, b) for a, b in zip(*grads))


def test_fallback_warning_once_per_reason_set():
    q = _rand(1, 4, 2, 64, dtype=torch.bfloat16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            fa3lite.flash_attn_func(q, q, q)
        fa3lite.flash_attn_func(q.float(), q.float(), q.float())   # a new reason: float32
        fa3lite.flash_attn_func(q.float(), q.float(), q.float())
        fa3lite.flash_attn_func(q, q, q, backend="torch")           # chosen explicitly: no warning
    messages = [str(w.message) for w in caught if issubclass(w.category, fa3lite.FallbackWarning)]
    assert len(messages) == 2, messages
    assert "q.device: expected a CUDA device" in messages[0] and "got cpu" in messages[0]
    assert "torch.float32" not in messages[0] and "got torch.float32" in messages[1]
    assert "fa3lite.fallback" in messages[0]


def test_backend_fa3lite_lists_every_reason():
    q = _rand(1, 4, 2, 80, dtype=torch.float32)
    with pytest.raises(fa3lite.InputError) as info:
        fa3lite.flash_attn_func(q, q, q, backend="fa3lite")
    message = str(info.value)
    assert "forward with backend='fa3lite': 3 problem(s)" in message
    for part in ("got cpu", "got torch.float32", "got 80"):
        assert part in message


def test_empty_inputs_through_flash_attn_func():
    for q_shape, k_shape in (((0, 3, 2, 8), (0, 4, 1, 8)), ((1, 0, 2, 8), (1, 4, 1, 8)),
                             ((1, 3, 2, 8), (1, 0, 1, 8))):
        q = torch.randn(q_shape, requires_grad=True)
        k, v = torch.randn(k_shape, requires_grad=True), torch.randn(k_shape, requires_grad=True)
        out, lse = fa3lite.flash_attn_func(q, k, v, causal=True, return_lse=True, backend="torch")
        assert out.shape == q_shape and lse.shape == (q_shape[0], q_shape[2], q_shape[1])
        assert torch.equal(out, torch.zeros(q_shape)) and torch.isneginf(lse).all()
        out.sum().backward()
        assert q.grad.shape == q_shape and k.grad.shape == k_shape and v.grad.shape == k_shape


# ---------------------------------------------------------------- scaled_dot_product_attention (CPU)

def _sdpa_inputs(b, hq, hk, sq, sk, d, dtype, dv=None, seed=0):
    return (_rand(b, hq, sq, d, dtype=dtype, seed=seed), _rand(b, hk, sk, d, dtype=dtype, seed=seed + 1),
            _rand(b, hk, sk, dv or d, dtype=dtype, seed=seed + 2))


_FA3LITE_PATH = list(itertools.product(
    [torch.float16, torch.bfloat16],
    [(2, 4, 4, 5, 9), (1, 4, 2, 9, 5), (2, 6, 1, 7, 7), (1, 2, 2, 1, 6)],   # (B, Hq, Hk, Sq, Sk)
    [False, True],                                                        # is_causal (top-left)
    [None, 0.3],                                                          # scale
))


@pytest.mark.parametrize("dtype,dims,is_causal,scale", _FA3LITE_PATH)
def test_sdpa_fa3lite_path_matches_torch_sdpa(dtype, dims, is_causal, scale):
    b, hq, hk, sq, sk = dims
    q, k, v = (t.requires_grad_() for t in _sdpa_inputs(b, hq, hk, sq, sk, 16, dtype))
    kwargs = dict(is_causal=is_causal, scale=scale, enable_gqa=hq != hk)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fa3lite.FallbackWarning)
        out = fa3lite.scaled_dot_product_attention(q, k, v, **kwargs)
    assert out.shape == (b, hq, sq, 16) and out.dtype == dtype
    dout = _rand(*out.shape, dtype=dtype, seed=9)
    grads = torch.autograd.grad(out, (q, k, v), dout)
    results = {}
    for kind, cdt in (("ref", torch.float64), ("pt", dtype)):
        leaves = [t.detach().to(cdt).requires_grad_() for t in (q, k, v)]
        o = F.scaled_dot_product_attention(*leaves, **kwargs)
        results[kind] = (o, *torch.autograd.grad(o, leaves, dout.to(cdt)))
    for i, name in enumerate(("out", "dq", "dk", "dv")):
        got = out if i == 0 else grads[i - 1]
        assert_close_fa3(got, results["ref"][i], results["pt"][i], fa3_atol(results["ref"][i]), name)


def test_sdpa_passes_its_tensors_to_the_op_and_returns_a_view(monkeypatch):
    """4-D SDPA calls reach fa3lite's op with the caller's very tensors in torch's layout (bhsd): no
    copies, no view ops (which would be autograd nodes of their own); out comes back as a (B, H, S, D)
    view of a contiguous (B, S, H, D) tensor."""
    q, k, v = _sdpa_inputs(2, 4, 2, 5, 7, 16, torch.bfloat16)
    seen = {}
    real = ops.attention

    def spy(qq, kk, vv, scale, causal, offset, deterministic, backend, checked=False, bhsd=False):
        seen.update(q=qq, k=kk, v=vv, scale=scale, causal=causal, offset=offset,
                    deterministic=deterministic, backend=backend, bhsd=bhsd)
        return real(qq, kk, vv, scale, causal, offset, deterministic, backend, checked, bhsd)

    monkeypatch.setattr(ops, "attention", spy)
    out = fa3lite.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True, backend="torch")
    assert not seen  # backend="torch" is torch's SDPA itself
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fa3lite.FallbackWarning)
        out = fa3lite.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    assert seen["q"] is q and seen["k"] is k and seen["v"] is v and seen["bhsd"] is True
    assert seen["scale"] == 16 ** -0.5 and seen["causal"] is True and seen["offset"] == 0
    assert seen["deterministic"] is False and seen["backend"] == "auto"
    assert out.shape == (2, 4, 5, 16) and out.transpose(1, 2).is_contiguous()


def test_sdpa_deterministic_follows_torch_setting(monkeypatch):
    q, k, v = _sdpa_inputs(1, 2, 2, 3, 3, 8, torch.float16)
    seen = []
    real = ops.attention
    monkeypatch.setattr(ops, "attention", lambda *a, **kw: seen.append(a[6]) or real(*a, **kw))
    was = torch.are_deterministic_algorithms_enabled()
    try:
        torch.use_deterministic_algorithms(True)
        fa3lite.scaled_dot_product_attention(q, k, v, backend="torch")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fa3lite.FallbackWarning)
            fa3lite.scaled_dot_product_attention(q, k, v)
    finally:
        torch.use_deterministic_algorithms(was)
    assert seen == [True]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
def test_sdpa_three_d_inputs(dtype):
    q, k, v = _rand(2, 5, 16, dtype=dtype), _rand(2, 7, 16, dtype=dtype, seed=1), _rand(2, 7, 16, dtype=dtype, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fa3lite.FallbackWarning)
        out = fa3lite.scaled_dot_product_attention(q, k, v, is_causal=True)
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert out.shape == want.shape == (2, 5, 16)
    ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
    assert_close_fa3(out, ref, want, fa3_atol(ref), "out")


def _torch_path_cases():
    """Calls handed unchanged to torch: results must be bitwise torch's."""
    q, k, v = _sdpa_inputs(2, 4, 2, 5, 6, 16, torch.float32)
    qh, kh, vh = (t.half() for t in (q, k, v))
    bool_mask = _rand(2, 4, 5, 6) > 0
    float_mask = _rand(5, 6)
    return {
        "bool_mask": ((qh, kh.repeat(1, 2, 1, 1), vh.repeat(1, 2, 1, 1)), dict(attn_mask=bool_mask)),
        "float_mask_gqa": ((qh, kh, vh), dict(attn_mask=float_mask, enable_gqa=True)),
        "fp32_causal_scale_gqa": ((q, k, v), dict(is_causal=True, scale=0.2, enable_gqa=True)),
        "fp64": ((q.double(), k.double(), v.double()), dict(enable_gqa=True)),
        "value_head_dim": ((qh, kh, _rand(2, 2, 6, 8, dtype=torch.float16)), dict(enable_gqa=True)),
        "mask_and_causal": ((qh, kh, vh), dict(enable_gqa=True, is_causal=True,
                                               attn_mask=torch.ones(5, 6, dtype=torch.bool))),
        "five_d": ((qh[None], kh.repeat(1, 2, 1, 1)[None], vh.repeat(1, 2, 1, 1)[None]), {}),
    }


@pytest.mark.parametrize("case", list(_torch_path_cases()))
@pytest.mark.parametrize("backend", ["auto", "torch"])
def test_sdpa_hands_unsupported_calls_to_torch_unchanged(case, backend):
    args, kwargs = _torch_path_cases()[case]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fa3lite.scaled_dot_product_attention(*args, backend=backend, **kwargs)
    assert torch.equal(out, F.scaled_dot_product_attention(*args, **kwargs))
    fallbacks = [w for w in caught if issubclass(w.category, fa3lite.FallbackWarning)]
    assert len(fallbacks) == (backend == "auto")
    if fallbacks:
        assert "torch.nn.functional.scaled_dot_product_attention" in str(fallbacks[0].message)


@pytest.mark.parametrize("seed", [0, 1])
def test_sdpa_dropout_with_a_fixed_seed_equals_torch(seed):
    q, k, v = _sdpa_inputs(2, 4, 4, 6, 6, 16, torch.bfloat16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fa3lite.FallbackWarning)
        torch.manual_seed(seed)
        out = fa3lite.scaled_dot_product_attention(q, k, v, dropout_p=0.4, is_causal=True)
    torch.manual_seed(seed)
    want = F.scaled_dot_product_attention(q, k, v, dropout_p=0.4, is_causal=True)
    assert torch.equal(out, want)
    torch.manual_seed(seed + 10)
    assert not torch.equal(want, F.scaled_dot_product_attention(q, k, v, dropout_p=0.4, is_causal=True))


def _torch_error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("case", ["gqa_without_enable_gqa", "gqa_bad_divisor", "dtype_mismatch",
                                  "head_dim_mismatch"])
def test_sdpa_errors_are_torchs(case):
    q, k, v = _sdpa_inputs(1, 4, 2, 3, 5, 8, torch.bfloat16)
    args, kwargs = {
        "gqa_without_enable_gqa": ((q, k, v), {}),
        "gqa_bad_divisor": ((q, k[:, :1].repeat(1, 3, 1, 1), v[:, :1].repeat(1, 3, 1, 1)),
                            dict(enable_gqa=True)),
        "dtype_mismatch": ((q, k.half(), v), dict(enable_gqa=True)),
        "head_dim_mismatch": ((q, k[..., :4], v), dict(enable_gqa=True)),
    }[case]
    want = _torch_error(lambda: F.scaled_dot_product_attention(*args, **kwargs))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _torch_error(lambda: fa3lite.scaled_dot_product_attention(*args, **kwargs))
    assert got == want
    assert not caught  # no fallback warning for a call torch rejects


def test_sdpa_backend_fa3lite_lists_every_reason():
    q, k, v = _sdpa_inputs(1, 2, 2, 3, 3, 80, torch.float32)
    with pytest.raises(fa3lite.InputError) as info:
        fa3lite.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(3, 3, dtype=torch.bool),
                                             dropout_p=0.1, backend="fa3lite")
    message = str(info.value)
    for part in ["attn_mask: expected None", "dropout_p: expected 0.0 for fa3lite, got 0.1",
                 "query/key/value.dtype: expected torch.float16 or torch.bfloat16", "got torch.float32",
                 "q.device: expected a CUDA device", "q.shape[3] (head dim): expected one of 64, 96, 128, 192, 256"]:
        assert part in message, f"{part!r} not in:\n{message}"
    with pytest.raises(fa3lite.InputError) as info:
        fa3lite.scaled_dot_product_attention(q.half(), k.half(), v.half()[:, :1], backend="fa3lite")
    assert "key.shape[1] (nheads): expected query's 2 heads (or enable_gqa=True), got 1" not in str(info.value)
    assert "value.shape: expected the same shape as key (1, 2, 3, 80), got (1, 1, 3, 80)" in str(info.value)


def test_sdpa_invalid_backend():
    q = _rand(1, 2, 3, 8)
    with pytest.raises(fa3lite.InputError, match="backend: expected one of 'auto', 'fa3lite', 'torch', got 'x'"):
        fa3lite.scaled_dot_product_attention(q, q, q, backend="x")


# ---------------------------------------------------------------- Hopper GPU

GPU_DTYPES = [torch.float16, torch.bfloat16]
HEAD_DIMS = [64, 128, 256]


def _gpu_case(b, sq, sk, hq, hk, d, dtype, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    mk = lambda *s: torch.randn(*s, generator=g, device="cuda", dtype=torch.float32).to(dtype)  # noqa: E731
    return mk(b, sq, hq, d), mk(b, sk, hk, d), mk(b, sk, hk, d)


def _check_against_reference(q, k, v, causal, dout=None, backward=True, scale=None):
    """flash_attn_func(backend='fa3lite') vs the float64 reference under FA3's rule (out, lse, grads)."""
    leaves = [t.detach().requires_grad_(backward) for t in (q, k, v)]
    out, lse = fa3lite.flash_attn_func(*leaves, softmax_scale=scale, causal=causal, return_lse=True,
                                       backend="fa3lite")
    offset = k.shape[1] - q.shape[1]
    results = {}
    for kind, cdt in (("ref", torch.float64), ("pt", q.dtype)):
        ref_leaves = [t.detach().requires_grad_(backward) for t in (q, k, v)]
        o, l = ref_attention(*ref_leaves, scale, causal, offset, dtype=cdt)
        results[kind] = [o, l]
        if backward:
            results[kind] += torch.autograd.grad(o, ref_leaves, dout.to(cdt))
    assert_close_fa3(out, results["ref"][0], results["pt"][0], fa3_atol(results["ref"][0]), "out")
    assert_close_fa3(lse, results["ref"][1], results["pt"][1].float(), fa3_atol(results["ref"][1]), "lse")
    if backward:
        grads = torch.autograd.grad(out, leaves, dout)
        for i, name in enumerate(("dq", "dk", "dv")):
            ref = results["ref"][2 + i]
            assert_close_fa3(grads[i], ref, results["pt"][2 + i], fa3_atol(ref), name)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", GPU_DTYPES, ids=str)
@pytest.mark.parametrize("d", HEAD_DIMS)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("sq,sk,hq,hk", [(128, 128, 4, 4), (113, 203, 4, 2), (239, 97, 6, 1)])
def test_gpu_forward_vs_reference(dtype, d, causal, sq, sk, hq, hk):
    q, k, v = _gpu_case(2, sq, sk, hq, hk, d, dtype)
    _check_against_reference(q, k, v, causal, backward=False)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", GPU_DTYPES, ids=str)
@pytest.mark.parametrize("d", HEAD_DIMS)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("sq,sk,hq,hk", [(128, 128, 4, 4), (113, 203, 4, 2), (239, 97, 6, 1)])
def test_gpu_forward_backward_vs_reference(dtype, d, causal, sq, sk, hq, hk):
    q, k, v = _gpu_case(2, sq, sk, hq, hk, d, dtype)
    dout = torch.randn(q.shape, device="cuda", dtype=dtype)
    _check_against_reference(q, k, v, causal, dout=dout)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", GPU_DTYPES, ids=str)
def test_gpu_packed_qkv_views_and_non_contiguous_dout(dtype):
    qkv = torch.randn(2, 177, 3, 4, 128, device="cuda", dtype=dtype)  # (B, S, 3, H, D) packed
    q, k, v = qkv.unbind(2)
    assert not q.is_contiguous() and checks.kernel_reasons(q, k, v) == []
    dout = torch.randn(2, 4, 177, 128, device="cuda", dtype=dtype).transpose(1, 2)  # non-contiguous
    _check_against_reference(q, k, v, causal=True, dout=dout)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", GPU_DTYPES, ids=str)
def test_gpu_sdpa_bhsd_views_vs_reference(dtype):
    query = torch.randn(2, 8, 200, 64, device="cuda", dtype=dtype, requires_grad=True)
    key = torch.randn(2, 2, 300, 64, device="cuda", dtype=dtype, requires_grad=True)
    value = torch.randn(2, 2, 300, 64, device="cuda", dtype=dtype, requires_grad=True)
    out = fa3lite.scaled_dot_product_attention(query, key, value, is_causal=True, enable_gqa=True,
                                               backend="fa3lite")
    assert out.shape == (2, 8, 200, 64) and out.transpose(1, 2).is_contiguous()
    dout = torch.randn_like(out)
    grads = torch.autograd.grad(out, (query, key, value), dout)
    results = {}
    for kind, cdt in (("ref", torch.float64), ("pt", dtype)):
        leaves = [t.detach().to(cdt).requires_grad_() for t in (query, key, value)]
        o = F.scaled_dot_product_attention(*leaves, is_causal=True, enable_gqa=True)
        results[kind] = (o, *torch.autograd.grad(o, leaves, dout.to(cdt)))
    for i, name in enumerate(("out", "dq", "dk", "dv")):
        got = out if i == 0 else grads[i - 1]
        assert_close_fa3(got, results["ref"][i], results["pt"][i], fa3_atol(results["ref"][i]), name)


@pytest.mark.gpu
def test_gpu_fully_masked_rows_and_no_keys():
    q, k, v = _gpu_case(1, 200, 70, 2, 2, 128, torch.bfloat16)
    out, lse = fa3lite.flash_attn_func(q, k, v, causal=True, return_lse=True, backend="fa3lite")
    assert torch.equal(out[:, :130], torch.zeros_like(out[:, :130]))
    assert torch.isneginf(lse[:, :, :130]).all() and torch.isfinite(lse[:, :, 130:]).all()
    out, lse = fa3lite.flash_attn_func(q, k[:, :0], v[:, :0], return_lse=True, backend="fa3lite")
    assert torch.equal(out, torch.zeros_like(out)) and torch.isneginf(lse).all()


@pytest.mark.gpu
def test_gpu_misaligned_view_falls_back_with_a_warning_and_stays_correct():
    base = torch.randn(2 * 64 * 2 * 64 + 1, device="cuda", dtype=torch.float16)
    q = base[1:].view(2, 64, 2, 64)  # 2 bytes off a 16-byte boundary
    with pytest.warns(fa3lite.FallbackWarning, match="q.data_ptr"):
        out = fa3lite.flash_attn_func(q, q, q, causal=True)
    ref, _ = ref_attention(q, q, q, causal=True)
    pt, _ = ref_attention(q, q, q, causal=True, dtype=q.dtype)
    assert_close_fa3(out, ref, pt, fa3_atol(ref), "out")
    with pytest.raises(fa3lite.InputError, match="q.data_ptr"):
        fa3lite.flash_attn_func(q, q, q, backend="fa3lite")
