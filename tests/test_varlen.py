"""flash_attn_varlen_func on the CPU (the torch fallback, one sequence at a time): validation with
named arguments, agreement with flash_attn_func per sequence (windows, softcap, sinks, empty and
one-row sequences, seqused gaps), gradients (gradcheck in float64, the sink's included), the custom
ops under opcheck and torch.compile(fullgraph=True)."""
import math
import warnings

import pytest
import torch

import fa3lite


def packed(lens_q, lens_k, hq=4, hk=2, d=16, dtype=torch.float64, gap=0, seed=0):
    g = torch.Generator().manual_seed(seed)

    def pack(lens, h):
        own = [n + gap for n in lens]
        cu = torch.tensor([0] + torch.tensor(own).cumsum(0).tolist(), dtype=torch.int32)
        return torch.randn(sum(own) + 2, h, d, generator=g, dtype=dtype), cu

    q, cu_q = pack(lens_q, hq)
    k, cu_k = pack(lens_k, hk)
    v, _ = pack(lens_k, hk)
    return q, k, v, cu_q, cu_k


CASES = [
    dict(),
    dict(causal=True),
    dict(causal=True, window_size=(2, -1), softcap=3.0),
    dict(window_size=(1, 2), learnable_sink=True),
    dict(causal=True, learnable_sink=True, softcap=5.0),
]


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("gap", [0, 2])
def test_matches_flash_attn_func_per_sequence(case, gap):
    lens_q, lens_k = [3, 0, 5, 1, 4], [4, 2, 0, 6, 1]
    q, k, v, cu_q, cu_k = packed(lens_q, lens_k, gap=gap)
    kwargs = dict(case)
    if kwargs.pop("learnable_sink", False):
        kwargs["learnable_sink"] = torch.randn(4, dtype=torch.float64)
    used = dict(seqused_q=torch.tensor(lens_q, dtype=torch.int32),
                seqused_k=torch.tensor(lens_k, dtype=torch.int32)) if gap else {}
    out, lse = fa3lite.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 5, 6, return_lse=True, **used, **kwargs)
    assert out.shape == q.shape and lse.shape == (4, q.shape[0])
    covered = torch.zeros(q.shape[0], dtype=torch.bool)
    for b, (sq, sk) in enumerate(zip(lens_q, lens_k)):
        qs, ks = cu_q[b].item(), cu_k[b].item()
        covered[qs:qs + sq] = True
        want, want_lse = fa3lite.flash_attn_func(q[qs:qs + sq][None], k[ks:ks + sk][None], v[ks:ks + sk][None],
                                                 return_lse=True, **kwargs)
        torch.testing.assert_close(out[qs:qs + sq], want[0])
        torch.testing.assert_close(lse[:, qs:qs + sq], want_lse[0])
    assert (out[~covered] == 0).all() and torch.isneginf(lse[:, ~covered]).all()


@pytest.mark.parametrize("case", CASES[1:], ids=str)
def test_gradcheck(case):
    q, k, v, cu_q, cu_k = packed([2, 0, 3], [3, 1, 2], hq=2, hk=1, d=4)
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    kwargs = dict(case)
    inputs = [q, k, v]
    if kwargs.pop("learnable_sink", False):
        inputs.append(torch.randn(2, dtype=torch.float64, requires_grad=True))

    def f(q, k, v, sink=None):
        extra = {"learnable_sink": sink} if sink is not None else {}
        return fa3lite.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 3, 3, **kwargs, **extra)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fa3lite.FallbackWarning)
        assert torch.autograd.gradcheck(f, tuple(inputs))


def test_grad_mode_takes_the_eager_twin_whose_double_backward_is_differentiable():
    """With inputs that require grad the call records _EagerVarlen (no custom-op dispatch: it cost
    ~250 us a call); create_graph=True then runs the torch math, so second derivatives are right."""
    q, k, v, cu_q, cu_k = packed([2, 0, 3], [3, 1, 2], hq=2, hk=1, d=4)
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    sink = torch.randn(2, dtype=torch.float64, requires_grad=True)

    def f(q, k, v, sink):
        return fa3lite.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 3, 3, causal=True, learnable_sink=sink)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fa3lite.FallbackWarning)
        assert type(f(q, k, v, sink).grad_fn).__name__ == "_EagerVarlenBackward"
        assert torch.autograd.gradgradcheck(f, (q, k, v, sink))


def test_errors_name_the_argument():
    q, k, v, cu_q, cu_k = packed([2, 3], [2, 3])
    with pytest.raises(fa3lite.InputError) as info:
        fa3lite.flash_attn_varlen_func(q[None], k, v, cu_q.long(), cu_k[:2], -1, 3, seqused_q=cu_q,
                                       window_size=(1,), softcap=-1.0, learnable_sink=torch.zeros(3))
    text = str(info.value)
    for expected in ("q.dim(): expected 3 dimensions", "cu_seqlens_q: expected an int32 tensor",
                     "max_seqlen_q: expected an int >= 0", "seqused_q: expected None or an int32 tensor",
                     "window_size: expected a (left, right) pair", "softcap: expected a finite real number"):
        assert expected in text, text
    with pytest.raises(fa3lite.InputError, match=r"cu_seqlens_k.shape: expected \(3,\)"):
        fa3lite.flash_attn_varlen_func(q, k, v, cu_q, cu_k[:2], 3, 3)
    with pytest.raises(fa3lite.InputError, match=r"learnable_sink.shape: expected \(4,\)"):
        fa3lite.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 3, 3, learnable_sink=torch.zeros(3))
    with pytest.raises(fa3lite.InputError, match="v.shape: expected the same shape as k"):
        fa3lite.flash_attn_varlen_func(q, k, v[:, :1], cu_q, cu_k, 3, 3)


def test_opcheck_varlen_fwd():
    q, k, v, cu_q, cu_k = packed([2, 3], [4, 1], dtype=torch.float32)
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    sink = torch.randn(4, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fa3lite.FallbackWarning)
        torch.library.opcheck(torch.ops.fa3lite.varlen_fwd.default,
                              (q, k, v, cu_q, cu_k, None, None, 3, 4, 0.25, True, 0, -2, 4.0, sink, False, "auto"))


def test_compiles_fullgraph():
    q, k, v, cu_q, cu_k = packed([2, 3], [4, 1], dtype=torch.float32)
    q.requires_grad_()

    def fn(q, k, v):
        return fa3lite.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 3, 4, causal=True, window_size=(1, -1))

    compiled = torch.compile(fn, fullgraph=True, backend="eager")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fa3lite.FallbackWarning)
        got, want = compiled(q, k, v), fn(q, k, v)
        torch.testing.assert_close(got, want)
        got.sum().backward()
    assert torch.isfinite(q.grad).all() and not math.isnan(q.grad.sum().item())


def test_kernel_reasons_name_the_packed_dims():
    q, k, v, cu_q, cu_k = packed([2, 3], [2, 3], d=80, dtype=torch.float16)
    with pytest.raises(fa3lite.InputError) as info:
        fa3lite.flash_attn_varlen_func(q, k, v[:, :, ::2].repeat_interleave(2, -1), cu_q, cu_k, 3, 3, backend="fa3lite")
    text = str(info.value)
    assert "q.shape[2] (head dim): expected one of 64, 96, 128, 192, 256" in text, text
    assert "shape[3]" not in text and "seqlen" not in text, text
