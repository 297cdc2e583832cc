"""Property test on the GPU: random windows, softcaps and sinks through the Hopper kernels (forward and
backward) against the Numba oracle (fa3lite.numba_kernels.reference), FA3's rule with `pt` the same
math in the input dtype (tests/test_features_gpu.py dense())."""
import pytest
import torch

pytestmark = pytest.mark.gpu
if not (torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)):
    pytest.skip("needs a Hopper (sm_90) GPU", allow_module_level=True)

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from fa3lite.hopper import bwd as hopper_bwd, fwd as hopper  # noqa: E402
from fa3lite.numba_kernels.reference import attention_backward, attention_forward  # noqa: E402
from test_features_gpu import check_rule, dense  # noqa: E402


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    Sq=st.integers(1, 400), Sk=st.integers(1, 400), D=st.sampled_from([64, 96, 128, 192, 256]),
    group=st.sampled_from([(2, 2), (4, 1), (6, 2)]), dtype=st.sampled_from([torch.bfloat16, torch.float16]),
    causal=st.booleans(), left=st.integers(-1, 300), right=st.integers(-1, 300),
    softcap=st.sampled_from([0.0, 4.0, 30.0]), sink=st.booleans(), seed=st.integers(0, 2**31 - 1),
)
def test_features_match_numba_oracle(Sq, Sk, D, group, dtype, causal, left, right, softcap, sink, seed):
    Hq, Hk = group
    g = torch.Generator(device="cuda").manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, device="cuda").to(dtype)  # noqa: E731
    q, k, v, dout = r(1, Sq, Hq, D), r(1, Sk, Hk, D), r(1, Sk, Hk, D), r(1, Sq, Hq, D)
    s = torch.randn(Hq, generator=g, device="cuda") if sink else None
    scale = D ** -0.5
    # flash_attn's window -> the kernels' band, relative to the bottom-right diagonal Sk - Sq
    diag = Sk - Sq
    right = 0 if causal else right
    upper = right >= 0
    causal_offset = diag + right if upper else 0
    local_offset = diag - left if left >= 0 else None
    out, lse = hopper.forward(q, k, v, scale, upper, causal_offset, local_offset, softcap, s)
    grads = hopper_bwd.backward(dout, q, k, v, out, lse, scale, upper, causal_offset, False,
                                local_offset=local_offset, softcap=softcap, sink=s)
    feats = dict(local=local_offset is not None, local_offset=local_offset or 0, softcap=softcap, sink=s)
    ref_out, ref_lse = attention_forward(q, k, v, scale, upper, causal_offset, **feats)
    ref_grads = attention_backward(dout, q, k, v, ref_out, ref_lse, scale, upper, causal_offset, **feats)
    pt = dense(q, k, v, s, dout, scale, causal, (left, right if not causal else -1), softcap, dtype)
    check_rule("out", out, ref_out, pt[0])
    check_rule("lse", lse, ref_lse, pt[1])
    for name, got, want, p in zip(("dq", "dk", "dv", "dsink"), grads, ref_grads, pt[2:]):
        check_rule(name, got, want, p, atol=1e-3 if name != "dsink" else 1e-2)
