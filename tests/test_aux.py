"""Tests of the auxiliary backward kernels (fa3lite.numba_kernels.aux) against torch.

Simulator isolation as in tests/test_reference.py: the ``sim`` cases are skipped in the ordinary pytest
process and ``test_simulator_suite`` re-runs this file in a subprocess with NUMBA_ENABLE_CUDASIM=1
(numba reads the variable only when first imported). GPU cases run on any CUDA GPU (bf16 included,
which the simulator cannot do).
"""

from __future__ import annotations


import pytest
import torch
from conftest import SIMULATOR, run_simulator_suite, sim
from hypothesis import given, settings
from hypothesis import strategies as st

HAS_CUDA = (not SIMULATOR) and torch.cuda.is_available()

SIM_SUITE_TIMEOUT_S = 600
SIM_DTYPES = [torch.float16, torch.float32]
GPU_DTYPES = [torch.float16, torch.bfloat16, torch.float32]


@pytest.mark.skipif(SIMULATOR, reason="this process is the simulator run")
def test_simulator_suite():
    """Run this file's simulator cases in a subprocess with NUMBA_ENABLE_CUDASIM=1."""
    run_simulator_suite(__file__, SIM_SUITE_TIMEOUT_S)


def rand(shape, dtype, device="cpu", strided=False, seed=0):
    """Random tensor of (B, S, H, D) ``shape``; ``strided`` gives a (B, H, S, D) buffer transposed."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    b, s, h, d = shape
    if strided:
        return torch.randn((b, h, s, d), generator=gen).to(device=device, dtype=dtype).transpose(1, 2)
    return torch.randn(shape, generator=gen).to(device=device, dtype=dtype)


def check_dot_do_o(shape, dout_dtype, out_dtype, device, strided, seed):
    from fa3lite.numba_kernels.aux import dot_do_o

    dout = rand(shape, dout_dtype, device, strided, seed)
    out = rand(shape, out_dtype, device, not strided, seed + 1)
    got = dot_do_o(dout, out)
    b, s, h, _ = shape
    assert got.shape == (b, h, s) and got.dtype == torch.float32 and got.is_contiguous()
    ref = (dout.double() * out.double()).sum(-1).transpose(1, 2)
    pt = (dout.float() * out.float()).sum(-1).transpose(1, 2)
    err = (got.double() - ref).abs().max().item() if ref.numel() else 0.0
    pt_err = (pt.double() - ref).abs().max().item() if ref.numel() else 0.0
    assert err <= 2 * pt_err + 1e-5, f"dot_do_o: err {err:.3g} vs fp32 torch {pt_err:.3g}"


def check_convert_dq(shape, dtype, scale, device, strided, seed, into_out):
    from fa3lite.numba_kernels.aux import convert_dq

    acc = rand(shape, torch.float32, device, strided, seed) * 3
    out = None
    if into_out:
        # A strided destination, like dq inside a packed (B, S, 3, H, D) gradient.
        b, s, h, d = shape
        out = torch.empty((b, s, 3, h, d), dtype=dtype, device=device)[:, :, 1]
    got = convert_dq(acc, dtype, scale, out=out)
    if into_out:
        assert got is out
    assert got.shape == shape and got.dtype == dtype
    # One fp32 multiply, one round-to-nearest-even conversion: exactly what torch does.
    assert torch.equal(got, (acc * torch.tensor(scale, dtype=torch.float32)).to(dtype))


def check_reduce_gqa(shape, hk, dtype, device, strided, seed):
    from fa3lite.numba_kernels.aux import reduce_gqa

    dx = rand(shape, torch.float32, device, strided, seed)
    got = reduce_gqa(dx, hk, dtype)
    b, s, hq, d = shape
    assert got.shape == (b, s, hk, d) and got.dtype == dtype
    ref = dx.double().view(b, s, hk, hq // hk, d).sum(3)
    # fp32 sums of at most a few terms, then one rounding to ``dtype``.
    tol = {torch.float32: 1e-6, torch.float16: 2**-10, torch.bfloat16: 2**-7}[dtype]
    torch.testing.assert_close(got.double(), ref, rtol=tol, atol=tol)


@st.composite
def shapes(draw, heads=(1, 2, 4)):
    return (draw(st.integers(1, 2)), draw(st.integers(0, 12)), draw(st.sampled_from(heads)), draw(st.integers(1, 20)))


@sim
@settings(max_examples=20, deadline=None)
@given(shapes(), st.sampled_from(SIM_DTYPES), st.sampled_from(SIM_DTYPES), st.booleans(), st.integers(0, 999))
def test_dot_do_o(shape, dout_dtype, out_dtype, strided, seed):
    check_dot_do_o(shape, dout_dtype, out_dtype, "cpu", strided, seed)


@sim
@settings(max_examples=20, deadline=None)
@given(shapes(), st.sampled_from(SIM_DTYPES), st.sampled_from([1.0, 0.125, 0.0883883]), st.booleans(),
       st.integers(0, 999), st.booleans())
def test_convert_dq(shape, dtype, scale, strided, seed, into_out):
    check_convert_dq(shape, dtype, scale, "cpu", strided, seed, into_out)


@sim
@settings(max_examples=20, deadline=None)
@given(shapes(heads=(4, 8)), st.sampled_from([1, 2, 4]), st.sampled_from(SIM_DTYPES), st.booleans(),
       st.integers(0, 999))
def test_reduce_gqa(shape, hk, dtype, strided, seed):
    check_reduce_gqa(shape, hk, dtype, "cpu", strided, seed)


@sim
def test_reduce_gqa_groups_are_consecutive_heads():
    """kv head g sums query heads g*G .. g*G+G-1 (query head h uses kv head h // G)."""
    from fa3lite.numba_kernels.aux import reduce_gqa

    hq, hk = 6, 2
    dx = torch.zeros(1, 1, hq, 1)
    dx[0, 0, :, 0] = torch.tensor([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    assert reduce_gqa(dx, hk)[0, 0, :, 0].tolist() == [7.0, 56.0]
    out = torch.full((1, 1, 2 * hk, 1), -1.0, dtype=torch.float16)[:, :, ::2]
    assert reduce_gqa(dx, hk, torch.float16, out=out) is out
    assert out[0, 0, :, 0].tolist() == [7.0, 56.0]


@sim
def test_bad_inputs_name_the_argument():
    from fa3lite.numba_kernels.aux import convert_dq, dot_do_o, reduce_gqa

    x = torch.zeros(1, 3, 4, 8)
    with pytest.raises(ValueError, match="out: expected the shape of dout"):
        dot_do_o(x, x[:, :2])
    with pytest.raises(TypeError, match="dq_accum: expected dtype"):
        convert_dq(x.half(), torch.float16)
    with pytest.raises(TypeError, match="dtype: expected"):
        convert_dq(x, torch.int8)
    with pytest.raises(TypeError, match="dtype: bfloat16 is not supported in the numba CUDA simulator"):
        convert_dq(x, torch.bfloat16)
    with pytest.raises(ValueError, match="out: expected shape"):
        convert_dq(x, torch.float16, out=torch.empty(1, 3, 4, 8))
    with pytest.raises(ValueError, match="num_kv_heads: expected a divisor"):
        reduce_gqa(x, 3)
    with pytest.raises(TypeError, match="dx: expected dtype"):
        reduce_gqa(x.half(), 2)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", GPU_DTYPES)
def test_gpu_aux_all_dtypes(dtype):
    shape = (2, 333, 8, 128)
    for strided in (False, True):
        check_dot_do_o(shape, dtype, torch.float32 if dtype != torch.float32 else torch.bfloat16, "cuda", strided, 1)
        check_dot_do_o(shape, dtype, dtype, "cuda", strided, 2)
        check_convert_dq(shape, dtype, 0.0883883, "cuda", strided, 3, into_out=strided)
        check_reduce_gqa(shape, 2, dtype, "cuda", strided, 4)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_gpu_convert_special_values(dtype):
    """Rounding ties, subnormals, overflow, signed zeros, inf and nan convert exactly as torch does."""
    from fa3lite.numba_kernels.aux import convert_dq

    info = torch.finfo(dtype)
    specials = torch.tensor(
        [0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), float("nan"), info.max, -info.max, info.tiny,
         info.tiny / 4, 3.0e38, -3.0e38, 1.0 + 2**-8, 1.0 + 3 * 2**-8, 1.0 + 2**-11, 1.0 + 3 * 2**-11, 65520.0],
        dtype=torch.float32,
    )
    bits = torch.randint(-(2**31), 2**31 - 1, (4096,), dtype=torch.int32).view(torch.float32)
    acc = torch.cat([specials, bits]).cuda().view(1, -1, 1, 1)
    got = convert_dq(acc, dtype, 1.0)
    want = acc.to(dtype)
    assert torch.equal(got.isnan(), want.isnan())
    finite = ~want.isnan()
    assert torch.equal(got[finite].view(torch.int16), want[finite].view(torch.int16))
