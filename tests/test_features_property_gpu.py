"""Property tests on the GPU: random windows, softcaps, sinks and head dims through the Hopper kernels
(forward and backward), fixed lengths and packed varlen batches (lengths 0 and 1 included, NaN in the
unused rows), against the Numba oracle (fa3lite.numba_kernels.reference, per sequence for varlen),
FA3's rule with `pt` the same math in the input dtype (tests/test_features_gpu.py dense())."""
import pytest
import torch

pytestmark = pytest.mark.gpu
if not (torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)):
    pytest.skip("needs a Hopper (sm_90) GPU", allow_module_level=True)

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from fa3lite.hopper import bwd as hopper_bwd, fwd as hopper, varlen as hopper_varlen  # noqa: E402
from fa3lite.numba_kernels.reference import attention_backward, attention_forward  # noqa: E402
from test_features_gpu import check_rule, dense, dsink_atol, dsink_slack_sq  # noqa: E402


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
    for name, got, want, p in zip(("dq", "dk", "dv"), grads, ref_grads, pt[2:5]):
        check_rule(name, got, want, p, atol=1e-3)
    if sink:
        check_rule("dsink", grads[3], ref_grads[3], pt[5],
                   atol=dsink_atol(dsink_slack_sq(ref_out, ref_lse, dout, s, dtype)))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lens=st.lists(st.tuples(st.integers(0, 300), st.integers(0, 300)), min_size=1, max_size=6),
    D=st.sampled_from([64, 96, 128, 192, 256]), group=st.sampled_from([(2, 2), (4, 1)]),
    dtype=st.sampled_from([torch.bfloat16, torch.float16]), causal=st.booleans(),
    left=st.integers(-1, 200), right=st.integers(-1, 200), softcap=st.sampled_from([0.0, 20.0]),
    sink=st.booleans(), gap=st.integers(0, 3), seed=st.integers(0, 2**31 - 1),
)
def test_varlen_matches_numba_oracle_per_sequence(lens, D, group, dtype, causal, left, right, softcap, sink, gap,
                                                  seed):
    # packed batches (with `gap` unused NaN rows after each sequence) through the varlen kernels,
    # forward and backward, each sequence against the oracle on its own rows
    Hq, Hk = group
    g = torch.Generator(device="cuda").manual_seed(seed)

    def pack(lengths, h):
        cu = torch.tensor([0] + torch.tensor([n + gap for n in lengths]).cumsum(0).tolist(), dtype=torch.int32,
                          device="cuda")
        t = torch.full((int(cu[-1]) + 1, h, D), float("nan"), device="cuda", dtype=dtype)
        for start, n in zip(cu.tolist(), lengths):
            t[start:start + n] = torch.randn(n, h, D, generator=g, device="cuda").to(dtype)
        return t, cu

    lq, lk = [a for a, _ in lens], [b for _, b in lens]
    (q, cu_q), (k, cu_k), (v, _), (dout, _) = pack(lq, Hq), pack(lk, Hk), pack(lk, Hk), pack(lq, Hq)
    used_q, used_k = (torch.tensor(x, dtype=torch.int32, device="cuda") for x in (lq, lk))
    s = torch.randn(Hq, generator=g, device="cuda") if sink else None
    scale = D ** -0.5
    right = 0 if causal else right
    upper = right >= 0
    # offsets relative to each sequence's diagonal (fa3lite/hopper/varlen.py)
    rel_causal, rel_local = (right if upper else 0), (-left if left >= 0 else None)
    out, lse = hopper_varlen.forward_varlen(q, k, v, cu_q, cu_k, max(lq), scale, upper, rel_causal, rel_local,
                                            softcap, s, used_q, used_k)
    grads = hopper_varlen.backward_varlen(dout, q, k, v, out, lse, cu_q, cu_k, max(lq), max(lk),
                                          scale, upper, rel_causal, rel_local, softcap, s, used_q, used_k)
    assert not any(torch.isnan(t).any() for t in (out, lse) + tuple(grads[:3]))
    dsink_ref = dsink_pt = slack_sq = 0.0
    for b, (sq, sk) in enumerate(lens):
        qs, ks = int(cu_q[b]), int(cu_k[b])
        if sq == 0:
            continue
        qb, kb, vb, dob = q[qs:qs + sq][None], k[ks:ks + sk][None], v[ks:ks + sk][None], dout[qs:qs + sq][None]
        diag = sk - sq
        feats = dict(local=rel_local is not None, local_offset=diag + (rel_local or 0), softcap=softcap, sink=s)
        ref_out, ref_lse = attention_forward(qb, kb, vb, scale, upper, diag + rel_causal, **feats)
        ref = attention_backward(dob, qb, kb, vb, ref_out, ref_lse, scale, upper, diag + rel_causal, **feats)
        pt = dense(qb, kb, vb, s, dob, scale, causal, (left, right if not causal else -1), softcap, dtype)
        check_rule(f"out[{b}]", out[qs:qs + sq][None], ref_out, pt[0])
        check_rule(f"lse[{b}]", lse[:, qs:qs + sq][None], ref_lse, pt[1])
        check_rule(f"dq[{b}]", grads[0][qs:qs + sq][None], ref[0], pt[2])
        if sk:
            check_rule(f"dk[{b}]", grads[1][ks:ks + sk][None], ref[1], pt[3])
            check_rule(f"dv[{b}]", grads[2][ks:ks + sk][None], ref[2], pt[4])
        if sink:
            dsink_ref, dsink_pt = dsink_ref + ref[3], dsink_pt + pt[5]
            slack_sq += dsink_slack_sq(ref_out, ref_lse, dob, s, dtype)
    if sink and any(sq for sq in lq):
        check_rule("dsink", grads[3], dsink_ref, dsink_pt, atol=dsink_atol(slack_sq))
