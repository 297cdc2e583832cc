"""Validation: every message names the argument, the expectation and what came; all problems at once."""
from __future__ import annotations

import pytest
import torch

import fa3lite
from fa3lite import checks

F16 = torch.float16


def _qkv(b=2, sq=5, sk=7, hq=4, hk=2, d=64, dtype=F16):
    return (torch.randn(b, sq, hq, d, dtype=dtype), torch.randn(b, sk, hk, d, dtype=dtype),
            torch.randn(b, sk, hk, d, dtype=dtype))


def _replace(qkv, **kw):
    q, k, v = qkv
    return kw.get("q", q), kw.get("k", k), kw.get("v", v)


# (id, build args (q, k, v) and keyword arguments, substrings the single message must contain:
#  the argument, the expectation and what came)
_CASES = [
    ("q_not_tensor", lambda t: (_replace(t, q=[[1.0]]), {}),
     ["q: expected a torch.Tensor", "got list"]),
    ("v_not_tensor", lambda t: (_replace(t, v=None), {}),
     ["v: expected a torch.Tensor", "got NoneType"]),
    ("rank", lambda t: (_replace(t, q=t[0][0]), {}),
     ["q.dim(): expected 4 dimensions (batch, seqlen, nheads, head dim)", "got 3 with shape (5, 4, 64)"]),
    ("dtype_int", lambda t: (tuple(x.to(torch.int32) for x in t), {}),
     ["q.dtype: expected one of torch.float16, torch.bfloat16, torch.float32, torch.float64",
      "got torch.int32"]),
    ("dtype_mismatch", lambda t: (_replace(t, k=t[1].bfloat16()), {}),
     ["k.dtype: expected the same dtype as q (torch.float16)", "got torch.bfloat16"]),
    ("device_mismatch", lambda t: (_replace(t, v=t[2].to("meta")), {}),
     ["v.device: expected the same device as q (cpu)", "got meta"]),
    ("batch", lambda t: (_replace(t, k=t[1][:1], v=t[2][:1]), {}),
     ["k.shape[0] (batch): expected q's batch size 2", "got 1"]),
    ("head_dim_qk", lambda t: (_replace(t, k=t[1][..., :32], v=t[2][..., :32]), {}),
     ["k.shape[3] (head dim): expected q's head dim 64", "got 32"]),
    ("kv_shape", lambda t: (_replace(t, v=t[2][:, :6]), {}),
     ["v.shape: expected the same shape as k (2, 7, 2, 64)", "got (2, 6, 2, 64)"]),
    ("gqa_divisibility", lambda t: (_replace(t, k=t[1][:, :, :1].expand(-1, -1, 3, -1),
                                             v=t[2][:, :, :1].expand(-1, -1, 3, -1)), {}),
     ["q.shape[2] (nheads_q): expected a multiple of k.shape[2] (nheads_k = 3)", "got 4"]),
    ("no_kv_heads", lambda t: (_replace(t, k=t[1][:, :, :0], v=t[2][:, :, :0]), {}),
     ["k.shape[2] (nheads_k): expected at least 1 when q has 4 heads", "got 0"]),
    ("empty_head_dim", lambda t: (tuple(x[..., :0] for x in t), {}),
     ["q.shape[3] (head dim): expected at least 1", "got 0"]),
    ("scale_type", lambda t: (t, {"softmax_scale": "0.1"}),
     ["softmax_scale: expected None or a finite real number", "got '0.1' (str)"]),
    ("scale_tensor", lambda t: (t, {"softmax_scale": torch.tensor(0.1)}),
     ["softmax_scale: expected None or a finite real number", "(Tensor)"]),
    ("scale_nan", lambda t: (t, {"softmax_scale": float("nan")}),
     ["softmax_scale: expected None or a finite real number", "got nan"]),
    ("causal", lambda t: (t, {"causal": 1}),
     ["causal: expected a bool", "got 1 (int)"]),
    ("deterministic", lambda t: (t, {"deterministic": "yes"}),
     ["deterministic: expected a bool", "got 'yes' (str)"]),
    ("return_lse", lambda t: (t, {"return_lse": None}),
     ["return_lse: expected a bool", "got None (NoneType)"]),
    ("backend", lambda t: (t, {"backend": "cuda"}),
     ["backend: expected one of 'auto', 'fa3lite', 'torch'", "got 'cuda'"]),
]


@pytest.mark.parametrize("build,expected", [c[1:] for c in _CASES], ids=[c[0] for c in _CASES])
def test_each_validation_message(build, expected):
    args, kwargs = build(_qkv())
    with pytest.raises(fa3lite.InputError) as info:
        fa3lite.flash_attn_func(*args, **kwargs)
    message = str(info.value)
    assert message.startswith("flash_attn_func: 1 problem(s):"), message
    for part in expected:
        assert part in message, f"{part!r} not in:\n{message}"


def test_error_type_is_value_and_type_error():
    assert issubclass(fa3lite.InputError, ValueError)
    assert issubclass(fa3lite.InputError, TypeError)
    with pytest.raises(ValueError):
        fa3lite.flash_attn_func(*_qkv(), backend="nope")
    with pytest.raises(TypeError):
        fa3lite.flash_attn_func(None, None, None)


def test_every_problem_is_collected_into_one_error():
    q, k, v = _qkv()
    with pytest.raises(fa3lite.InputError) as info:
        fa3lite.flash_attn_func(q, k.bfloat16(), v[:, :3].double(), softmax_scale="x", causal=None, backend="gpu")
    message = str(info.value)
    for part in ["k.dtype: expected the same dtype as q", "v.dtype: expected the same dtype as q",
                 "v.shape: expected the same shape as k", "softmax_scale:", "causal: expected a bool",
                 "backend: expected one of"]:
        assert part in message, f"{part!r} not in:\n{message}"
    assert message.startswith("flash_attn_func: 6 problem(s):"), message


def test_problems_between_the_tensors_are_checked_even_when_one_is_missing():
    q, k, _ = _qkv()
    problems = checks.attention_problems(q, k.double(), "v")
    assert problems == ["v: expected a torch.Tensor, got str",
                        "k.dtype: expected the same dtype as q (torch.float16), got torch.float64"]


def test_valid_inputs_have_no_problems():
    assert checks.attention_problems(*_qkv()) == []
    assert checks.attention_problems(*_qkv(dtype=torch.float32)) == []
    assert checks.attention_problems(*_qkv(hk=1)) == []   # MQA
    assert checks.attention_problems(*_qkv(b=0, sq=0, sk=0, hq=0, hk=0)) == []  # empty is valid


def test_bhsd_layout_names_the_sdpa_arguments():
    q, k, v = (t.transpose(1, 2) for t in _qkv(hq=4, hk=3))
    assert checks.attention_problems(q, k, v, ("query", "key", "value"), layout="bhsd") == [
        "query.shape[1] (nheads_q): expected a multiple of key.shape[1] (nheads_k = 3), got 4"]


# ---- kernel-only limits: reasons to fall back (raised only with backend="fa3lite") ----

def _reasons(q, k, v, **kw):
    return [r for r in checks.kernel_reasons(q, k, v, **kw) if not r.startswith("q.device")]


def test_kernel_reasons_device_on_cpu():
    reasons = checks.kernel_reasons(*_qkv())
    assert reasons == ["q.device: expected a CUDA device with compute capability 9.0 (Hopper) for the "
                       "fa3lite kernels, got cpu"]


@pytest.mark.parametrize("dtype", [F16, torch.bfloat16])
@pytest.mark.parametrize("d", [64, 96, 128, 192, 256])
def test_kernel_reasons_none_beyond_the_device_for_supported_inputs(dtype, d):
    assert _reasons(*_qkv(d=d, dtype=dtype)) == []


def test_kernel_reasons_dtype_and_head_dim():
    assert _reasons(*_qkv(d=80, dtype=torch.float32)) == [
        "q.dtype: expected torch.float16 or torch.bfloat16 for the fa3lite kernels, got torch.float32",
        "q.shape[3] (head dim): expected one of 64, 96, 128, 192, 256 for the fa3lite kernels, got 80"]


def test_kernel_reasons_last_dim_stride():
    q, k, v = _qkv()
    q = torch.randn(2, 5, 4, 128, dtype=F16)[..., ::2]
    assert _reasons(q, k, v) == [
        "q.stride(3) (head dim): expected 1 (last dim contiguous) for the fa3lite kernels, got 2"]


def test_kernel_reasons_misaligned_base():
    q, k, v = _qkv()
    k = torch.randn(k.numel() + 1, dtype=F16)[1:].view(k.shape)
    assert _reasons(q, k, v) == [
        "k.data_ptr(): expected a multiple of 16 bytes for the fa3lite kernels (TMA), got an address "
        "2 bytes past one (storage_offset 1)"]


def test_kernel_reasons_stride_not_16_byte_multiple():
    q, k, v = _qkv()
    v = torch.randn(2, 7, 2, 65, dtype=F16)[..., :64]  # rows of 130 bytes
    assert _reasons(q, k, v) == [
        "v.stride(0) (batch): expected a positive multiple of 16 bytes below 2^40 for the fa3lite "
        "kernels (TMA), got 910 elements = 1820 bytes",
        "v.stride(1) (seqlen): expected a positive multiple of 16 bytes below 2^40 for the fa3lite "
        "kernels (TMA), got 130 elements = 260 bytes",
        "v.stride(2) (nheads): expected a positive multiple of 16 bytes below 2^40 for the fa3lite "
        "kernels (TMA), got 65 elements = 130 bytes"]


def test_kernel_reasons_zero_stride_of_an_expanded_dim():
    q, k, v = _qkv()
    k = k[:, :, :1].expand(-1, -1, 2, -1)
    assert _reasons(q, k, v) == [
        "k.stride(2) (nheads): expected a positive multiple of 16 bytes below 2^40 for the fa3lite "
        "kernels (TMA), got 0 elements = 0 bytes"]


def test_kernel_reasons_ignore_strides_of_size_one_dims():
    q, k, v = _qkv(b=1, hq=1, hk=1)
    q = q.as_strided(q.shape, (3, q.stride(1), 5, 1))  # batch and heads of size 1, odd strides
    assert _reasons(q, k, v) == []


def test_kernel_reasons_softmax_scale():
    assert _reasons(*_qkv(), softmax_scale=0.0) == [
        "softmax_scale: expected > 0 for the fa3lite kernels, got 0.0"]
    assert _reasons(*_qkv(), softmax_scale=0.125) == []


class _OnCuda:
    """A CPU tensor that reports a CUDA device, to reach the capability branch without a GPU."""

    def __init__(self, t):
        self._t = t
        self.device = torch.device("cuda", 0)

    def __getattr__(self, name):
        return getattr(self._t, name)


@pytest.mark.parametrize("capability,got", [((8, 0), "got capability 8.0 on cuda:0"),
                                            ((10, 0), "got capability 10.0 on cuda:0"),
                                            (None, "got no usable CUDA driver on cuda:0")])
def test_kernel_reasons_capability(monkeypatch, capability, got):
    monkeypatch.setattr(checks, "_capability", lambda device: capability)
    q, k, v = (_OnCuda(t) for t in _qkv())
    assert checks.kernel_reasons(q, k, v) == [
        f"q.device: expected compute capability 9.0 (Hopper) for the fa3lite kernels, {got}"]


def test_kernel_reasons_accept_hopper(monkeypatch):
    monkeypatch.setattr(checks, "_capability", lambda device: (9, 0))
    assert checks.kernel_reasons(*(_OnCuda(t) for t in _qkv())) == []


def test_backend_fa3lite_raises_with_every_reason_on_cpu():
    q = torch.randn(1, 3, 2, 80)
    k = torch.randn(1, 4, 2, 81)[..., :80]
    with pytest.raises(fa3lite.InputError) as info:
        fa3lite.flash_attn_func(q, k, k, backend="fa3lite")
    message = str(info.value)
    for part in ["q.device: expected a CUDA device", "got cpu",
                 "q.dtype: expected torch.float16 or torch.bfloat16", "got torch.float32",
                 "q.shape[3] (head dim): expected one of 64, 96, 128, 192, 256", "got 80",
                 "k.stride(1) (seqlen)", "k.stride(2) (nheads)", "v.stride(1) (seqlen)"]:
        assert part in message, f"{part!r} not in:\n{message}"


@pytest.mark.parametrize("scale", [1e39, -3e38, 2.4e38])
def test_scale_beyond_float32_after_log2e_is_an_input_error(scale):
    q, k, v = _qkv()
    with pytest.raises(fa3lite.InputError, match="softmax_scale: expected a magnitude of at most 2.359e\\+38"):
        fa3lite.flash_attn_func(q, k, v, softmax_scale=scale)


def test_largest_representable_scale_passes_validation():
    assert checks.scale_problems("softmax_scale", 2.35e38) == []
    assert checks.scale_problems("softmax_scale", checks.MAX_SCALE) == []


def test_fallback_warning_once_per_kind_of_reason_whatever_the_values():
    """200 calls whose reasons differ only in their values (offsets, strides) warn once; a new kind of
    reason warns again."""
    import warnings

    checks.reset_fallback_warnings()
    base = torch.randn(2 * 5 * 4 * 64 + 400, dtype=F16)
    offsets = [o for o in range(1, 300) if o % 8][:200]    # never 16-byte aligned
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for offset in offsets:
            q = base[offset:offset + 2 * 5 * 4 * 64].view(2, 5, 4, 64)   # misaligned by `offset` elements
            fa3lite.flash_attn_func(q, q, q)
        fa3lite.flash_attn_func(*_qkv(d=80))                               # a new kind: the head dim
    shown = [w for w in caught if issubclass(w.category, fa3lite.FallbackWarning)]
    assert len(shown) == 2, [str(w.message) for w in shown]
    assert "q.data_ptr(): expected a multiple of 16 bytes" in str(shown[0].message)
    assert "q.shape[3] (head dim)" in str(shown[1].message)


def test_fallback_warnings_are_bounded(monkeypatch):
    import warnings

    checks.reset_fallback_warnings()
    monkeypatch.setattr(checks, "_MAX_WARNED", 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(10):
            checks.warn_fallback_once([f"kind{i}: expected x, got y"], "the fallback")
    assert len(caught) == 3 and len(checks._warned) == 3
    checks.reset_fallback_warnings()


def test_reason_kind_drops_the_values():
    assert checks.reason_kind("q.stride(0) (batch): expected a positive multiple of 16 bytes, got 8") == \
        "q.stride(0) (batch)"
    assert checks.reason_kind("no colon at all") == "no colon at all"


def test_kernel_reasons_for_unequal_head_dims():
    q, k, _ = _qkv(d=192, dtype=torch.bfloat16)
    v = torch.zeros(k.shape[:3] + (128,), dtype=torch.bfloat16)
    assert _reasons(q, k, v) == []                       # DeepSeek's (192, 128)
    q, k, _ = _qkv(d=128, dtype=torch.bfloat16)
    v = torch.zeros(k.shape[:3] + (64,), dtype=torch.bfloat16)
    assert _reasons(q, k, v) == [
        "v.shape[3] (head dim): expected q's head dim 128 (or 128 with q's 192) for the fa3lite kernels, got 64"]
