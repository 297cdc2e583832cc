"""Property test on the GPU: random shapes, dtypes, masks and layouts against the Numba oracle.

Hypothesis prints the falsifying example (and keeps it in its database), so any failure re-runs
with `pytest tests/test_fwd_property_gpu.py`.
"""
import math

import pytest
import torch

pytestmark = pytest.mark.gpu
if not (torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)):
    pytest.skip("needs a Hopper (sm_90) GPU", allow_module_level=True)

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from fa3lite import hopper  # noqa: E402
from fa3lite.numba_kernels.reference import attention_forward  # noqa: E402

ATOL = 1e-3


def make(layout, B, S, H, D, dtype, gen):
    """A (B, S, H, D) tensor stored contiguously, inside a packed qkv buffer, or as a BHSD transpose."""
    if layout == "contiguous":
        return torch.randn(B, S, H, D, device="cuda", dtype=dtype, generator=gen)
    if layout == "packed":
        return torch.randn(B, S, 3, H, D, device="cuda", dtype=dtype, generator=gen)[:, :, 1]
    return torch.randn(B, H, S, D, device="cuda", dtype=dtype, generator=gen).transpose(1, 2)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    B=st.integers(1, 4),
    Sq=st.integers(1, 700),
    Sk=st.integers(1, 700),
    group=st.sampled_from([(4, 4), (8, 2), (3, 1), (2, 2)]),
    D=st.sampled_from([64, 128, 256]),
    dtype=st.sampled_from([torch.bfloat16, torch.float16]),
    causal=st.booleans(),
    layouts=st.tuples(*[st.sampled_from(["contiguous", "packed", "transposed"])] * 3),
    seed=st.integers(0, 2**31 - 1),
)
def test_forward_matches_numba_oracle(B, Sq, Sk, group, D, dtype, causal, layouts, seed):
    Hq, Hk = group
    gen = torch.Generator(device="cuda").manual_seed(seed)
    q = make(layouts[0], B, Sq, Hq, D, dtype, gen)
    k = make(layouts[1], B, Sk, Hk, D, dtype, gen)
    v = make(layouts[2], B, Sk, Hk, D, dtype, gen)
    scale = D ** -0.5
    offset = Sk - Sq
    out, lse = hopper.forward(q, k, v, scale, causal, offset)
    ref, ref_lse = attention_forward(q, k, v, scale, causal, offset)
    # `pt`: the same math in the input dtype (scores, P and P.V rounded to it), for FA3's bound.
    g = Hq // Hk
    s = torch.einsum("bqhd,bkhd->bhqk", q, k.repeat_interleave(g, 2)) * scale
    if causal:
        i = torch.arange(Sq, device="cuda")[:, None]
        j = torch.arange(Sk, device="cuda")[None, :]
        s = s.masked_fill(j > i + offset, -math.inf)
    p = torch.softmax(s.float(), -1).nan_to_num(0.0).to(dtype)
    pt = torch.einsum("bhqk,bkhd->bqhd", p, v.repeat_interleave(g, 2)).float()
    err = (out.float() - ref).abs().max().item()
    bound = 2 * (pt - ref).abs().max().item() + ATOL
    assert not torch.isnan(out).any()
    assert err <= bound, f"max|out-ref| {err:.3e} > {bound:.3e}"
    fin = torch.isfinite(ref_lse)
    assert torch.equal(torch.isfinite(lse), fin)
    assert (lse[~fin] == -math.inf).all()
    if fin.any():
        assert (lse[fin] - ref_lse[fin]).abs().max().item() <= 2e-3
