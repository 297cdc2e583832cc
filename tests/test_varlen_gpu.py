"""flash_attn_varlen_func on the Hopper forward kernel: packed sequences against dense attention per
sequence (FA3's rule for out and lse), with NaN in every row no sequence uses -- the gaps seqused
leaves and the rows past the last sequence -- so a read of a neighbour's rows would show; lengths 0,
1, off the tile and longer than it; causal, windows, softcap, sinks, GQA, every head dim. The
backward kernels likewise, through autograd, for dq, dk, dv and dsink; deterministic mode repeats
bitwise.
"""
import math

import pytest
import torch

pytestmark = pytest.mark.gpu
if not (torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)):
    pytest.skip("needs a Hopper (sm_90) GPU", allow_module_level=True)

import fa3lite  # noqa: E402
from test_features_gpu import check_rule, dense, dsink_atol, dsink_slack_sq  # noqa: E402


def packed(lens_q, lens_k, hq, hk, d, dtype, gaps=(), seed=0, dv=None):
    """q, k, v with sequence b in rows [cu[b], cu[b] + len[b]), NaN everywhere else: each sequence
    owns len + gap rows (seqused = len), and 7 NaN rows follow the last one."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    gaps = list(gaps) or [0] * len(lens_q)

    def pack(lens, h, d=d):
        own = [n + gap for n, gap in zip(lens, gaps)]
        cu = torch.tensor([0] + torch.tensor(own).cumsum(0).tolist(), dtype=torch.int32, device="cuda")
        t = torch.full((sum(own) + 7, h, d), math.nan, device="cuda", dtype=dtype)
        for start, n in zip(cu.tolist(), lens):
            t[start:start + n] = torch.randn(n, h, d, generator=g, device="cuda").to(dtype)
        return t, cu

    q, cu_q = pack(lens_q, hq)
    k, cu_k = pack(lens_k, hk)
    v, _ = pack(lens_k, hk, dv or d)
    used = lambda lens: torch.tensor(lens, dtype=torch.int32, device="cuda")  # noqa: E731
    return q, k, v, cu_q, cu_k, used(lens_q), used(lens_k)


def check(lens_q, lens_k, hq=4, hk=2, d=128, dtype=torch.bfloat16, causal=False, window=(-1, -1), softcap=0.0,
          sink=False, gaps=(), deterministic=False, dv=None):
    """Forward and backward on the kernels; every sequence against dense() with FA3's rule; rows no
    sequence uses: out 0, lse -inf, gradients 0 (their inputs, and dout there, are NaN)."""
    q, k, v, cu_q, cu_k, used_q, used_k = packed(lens_q, lens_k, hq, hk, d, dtype, gaps, dv=dv)
    dout = packed(lens_q, lens_k, hq, hk, dv or d, dtype, gaps, seed=1)[0]
    s = torch.randn(hq, generator=torch.Generator(device="cuda").manual_seed(7), device="cuda") if sink else None
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    s_leaf = s.clone().requires_grad_() if sink else None
    out, lse = fa3lite.flash_attn_varlen_func(*leaves, cu_q, cu_k, max(lens_q), max(lens_k), seqused_q=used_q,
                                              seqused_k=used_k, causal=causal, window_size=window, softcap=softcap,
                                              learnable_sink=s_leaf, deterministic=deterministic, return_lse=True,
                                              backend="fa3lite")
    out.backward(dout)
    dq, dk, dv = (t.grad for t in leaves)
    assert out.shape == (*q.shape[:2], v.shape[2]) and lse.shape == (hq, q.shape[0])
    for name, t in (("out", out), ("lse", lse), ("dq", dq), ("dk", dk), ("dv", dv)):
        assert not torch.isnan(t).any(), f"{name}: NaN"
    written_q = torch.zeros(q.shape[0], dtype=torch.bool, device="cuda")
    written_k = torch.zeros(k.shape[0], dtype=torch.bool, device="cuda")
    dsink_ref = dsink_pt = slack_sq = 0.0
    for b, (sq, sk) in enumerate(zip(lens_q, lens_k)):
        qs, ks = cu_q[b].item(), cu_k[b].item()
        written_q[qs:qs + sq] = True
        written_k[ks:ks + sk] = True
        if sq == 0:
            continue
        args = (q[qs:qs + sq][None], k[ks:ks + sk][None], v[ks:ks + sk][None], s, dout[qs:qs + sq][None],
                d ** -0.5, causal, window, softcap)
        ref, pt = dense(*args, torch.float32), dense(*args, dtype)
        check_rule(f"out[{b}]", out[qs:qs + sq][None], ref[0], pt[0])
        check_rule(f"lse[{b}]", lse[:, qs:qs + sq][None], ref[1], pt[1])
        check_rule(f"dq[{b}]", dq[qs:qs + sq][None], ref[2], pt[2])
        if sk:
            check_rule(f"dk[{b}]", dk[ks:ks + sk][None], ref[3], pt[3])
            check_rule(f"dv[{b}]", dv[ks:ks + sk][None], ref[4], pt[4])
        if sink:
            dsink_ref, dsink_pt = dsink_ref + ref[5], dsink_pt + pt[5]
            slack_sq += dsink_slack_sq(ref[0], ref[1], dout[qs:qs + sq][None], s, dtype)
    if sink:
        check_rule("dsink", s_leaf.grad, dsink_ref, dsink_pt, atol=dsink_atol(slack_sq))
    assert (out[~written_q] == 0).all() and torch.isneginf(lse[:, ~written_q]).all()
    assert (dq[~written_q] == 0).all() and (dk[~written_k] == 0).all() and (dv[~written_k] == 0).all()
    return dq, dk, dv


@pytest.mark.parametrize("d", [64, 96, 128, 192, 256])
@pytest.mark.parametrize("causal", [False, True])
def test_lengths(d, causal):
    check([1, 130, 0, 257, 64, 500], [5, 0, 300, 257, 1, 700], d=d, causal=causal, gaps=[3, 0, 17, 1, 0, 9])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_one_long_and_many_short(dtype):
    check([2000] + [1] * 20 + [33], [1999] + [2] * 20 + [40], hq=8, hk=1, dtype=dtype, causal=True)


@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("causal", [False, True])
def test_many_tiles_per_cta(d, causal):
    # Several hundred tiles over at most one CTA per SM: each CTA claims tiles of many sequences in
    # turn (maps rewritten per tile, alternating sets), among them tiles that see no key (a sequence
    # without keys; causal rows above a short sequence's diagonal), which d=256 (O staged in sQ)
    # writes without staging. Lengths 0, 1, off the tile and past it, NaN gaps between sequences.
    draw = torch.Generator().manual_seed(d + causal)
    lens_q = torch.randint(0, 300, (40,), generator=draw).tolist() + [1, 400, 300, 0]
    lens_k = torch.randint(0, 300, (40,), generator=draw).tolist() + [1, 100, 0, 9]
    gaps = torch.randint(0, 3, (44,), generator=draw).tolist()
    check(lens_q, lens_k, hq=16, hk=4, d=d, causal=causal, gaps=gaps)


@pytest.mark.parametrize("window,causal", [((64, -1), True), ((20, 30), False), ((-1, 5), False)])
def test_windows(window, causal):
    check([300, 1, 129, 700], [280, 50, 129, 640], causal=causal, window=window, gaps=[5, 5, 0, 2])


def test_softcap_and_sink():
    check([300, 0, 129, 7], [280, 50, 1, 640], causal=True, window=(100, -1), softcap=20.0, sink=True, d=64)
    check([3, 200], [0, 180], sink=True, d=256)    # a sequence with no key: out 0, lse = the sink


def test_matches_flash_attn_func_per_sequence():
    # each sequence's rows agree with a fixed-length call on that sequence (within bf16 rounding)
    q, k, v, cu_q, cu_k, used_q, used_k = packed([513, 77], [600, 77], 4, 4, 128, torch.bfloat16)
    out = fa3lite.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 513, 600, seqused_q=used_q, seqused_k=used_k,
                                         causal=True, backend="fa3lite")
    for b, (sq, sk) in enumerate([(513, 600), (77, 77)]):
        qs, ks = cu_q[b].item(), cu_k[b].item()
        want = fa3lite.flash_attn_func(q[qs:qs + sq][None], k[ks:ks + sk][None], v[ks:ks + sk][None], causal=True,
                                       backend="fa3lite")
        torch.testing.assert_close(out[qs:qs + sq], want[0], atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("d", [64, 128, 256])
def test_deterministic_repeats_bitwise(d):
    case = dict(d=d, causal=True, window=(300, -1), sink=True, deterministic=True, gaps=[2, 0, 9])
    first = check([700, 1, 900], [650, 40, 900], **case)
    for _ in range(2):
        again = check([700, 1, 900], [650, 40, 900], **case)
        for a, b in zip(first, again):
            assert torch.equal(a, b)


def test_value_head_dim_128_beside_192():
    check([300, 1, 129], [280, 50, 129], d=192, dv=128, causal=True, sink=True, gaps=[2, 0, 5])


@pytest.mark.parametrize("deterministic", [False, True], ids=["default", "det"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("hq,hk", [(8, 2), (4, 1)], ids=["gqa", "mqa"])
@pytest.mark.parametrize("d", [64, 96, 128, 256])   # BwdVariant.groupable_heads
def test_grouped_heads_backward(monkeypatch, d, hq, hk, causal, deterministic):
    """GQA with one CTA per (key block, K/V head) summing the group's dK/dV (bwd_scheduler.cuh), forced
    at these small shapes: every gradient by FA3's rule, rows no sequence owns zero, lengths 0 and 1,
    a sink; deterministic mode repeats bitwise."""
    from fa3lite.hopper import bwd, varlen
    monkeypatch.setattr(bwd, "GROUPED_MIN_CTAS_PER_SM", 0)
    varlen._bwd_plans.clear()
    try:
        case = dict(hq=hq, hk=hk, d=d, causal=causal, sink=True, deterministic=deterministic, gaps=[3, 0, 17, 1])
        first = check([1, 130, 0, 257], [5, 0, 300, 257], **case)
        assert varlen._bwd_plans and not any(plan.dkv_f32 for plan in varlen._bwd_plans.values())
        if deterministic:
            again = check([1, 130, 0, 257], [5, 0, 300, 257], **case)
            assert all(torch.equal(a, b) for a, b in zip(first, again))
    finally:
        varlen._bwd_plans.clear()


@pytest.mark.parametrize("softcap", [0.0, 30.0], ids=["plain", "softcap"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_persistent_backward_walks_sequences(monkeypatch, causal, softcap):
    """D = 64 varlen backward on three CTAs (FA3LITE_BWD_MAX_CTAS) that take every tile from the
    counter: tiles of many sequences per CTA, among them padded key blocks past a sequence's keys (no
    work, no barrier phase) and sequences of length 0 and 1; every gradient by FA3's rule, rows no
    sequence owns zero. Causal softcap keeps one CTA per tile (BwdVariant.persistent): its grid is
    asserted to be the whole one."""
    from fa3lite.hopper import varlen
    monkeypatch.setenv("FA3LITE_BWD_MAX_CTAS", "3")
    varlen._bwd_plans.clear()
    try:
        draw = torch.Generator().manual_seed(11 + causal)
        lens_q = torch.randint(0, 260, (12,), generator=draw).tolist() + [1, 0, 700]
        lens_k = torch.randint(0, 260, (12,), generator=draw).tolist() + [0, 1, 650]
        check(lens_q, lens_k, hq=4, hk=4, d=64, causal=causal, softcap=softcap, gaps=[2] * 15)
        plans = list(varlen._bwd_plans.values())
        walks = not (causal and softcap)
        assert plans and all((plan.main_grid[0] == 3) == walks for plan in plans), [p.main_grid for p in plans]
    finally:
        varlen._bwd_plans.clear()
