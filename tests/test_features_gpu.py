"""Sliding windows, softcap and learnable sinks on the Hopper kernels, forward and backward, through
flash_attn_func(backend="fa3lite") with autograd: FA3's accuracy rule for out, lse, dq, dk, dv and
dsink over odd shapes (Sq != Sk both ways, lengths off the tile, length 1), rows that see no key,
GQA, every head dim; deterministic mode repeats bitwise.

Reference: `ref` is float32 torch math (dense scores, the band mask, tanh, the sink as one extra
logit column that is dropped after the softmax, autograd), `pt` the same math with the matmuls in the
input dtype. A result passes when max|x - ref| <= 2 * max|pt - ref| + atol, with no NaN anywhere;
atol is FA3's (twice the reference's rounding error in the output dtype), at least ATOL.
"""
import math

import pytest
import torch

pytestmark = pytest.mark.gpu
if not (torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)):
    pytest.skip("needs a Hopper (sm_90) GPU", allow_module_level=True)

import fa3lite  # noqa: E402
from fa3lite.bench.reference import visible_mask  # noqa: E402  (flash_attn's window, bottom-right)

ATOL = 1e-3


def dense(q, k, v, sink, dout, scale, causal, window, softcap, dtype):
    """(out, lse, dq, dk, dv, dsink) of dense attention with the matmuls in ``dtype``, the softmax in
    float32."""
    g = q.shape[2] // k.shape[2]
    qd, kd, vd = (t.detach().to(dtype).requires_grad_() for t in (q, k, v))
    sd = sink.detach().float().requires_grad_() if sink is not None else None
    s = torch.einsum("bqhd,bkhd->bhqk", qd, kd.repeat_interleave(g, 2)).float() * scale
    if softcap > 0:
        s = softcap * torch.tanh(s / softcap)
    visible = visible_mask(q.shape[1], k.shape[1], causal, window, q.device)
    s = s.masked_fill(~visible, -math.inf)
    if sd is not None:
        s = torch.cat([s, sd.view(1, -1, 1, 1).expand(s.shape[0], -1, s.shape[2], 1)], dim=-1)
    lse = torch.logsumexp(s.detach(), -1)
    empty = torch.isneginf(lse)[..., None]          # rows with no visible key and no sink
    p = torch.softmax(s.masked_fill(empty, 0.0), -1).masked_fill(empty, 0.0)
    if sd is not None:
        p = p[..., :-1]
    out = torch.einsum("bhqk,bkhd->bqhd", p.to(dtype), vd.repeat_interleave(g, 2))
    out.backward(dout.to(dtype))
    return out.detach(), lse, qd.grad, kd.grad, vd.grad, (sd.grad if sd is not None else None)


def rounding_atol(ref, dtype):
    """FA3's atol: twice the rounding error of the reference's values in the output dtype (the
    error a correct result has after its final rounding alone)."""
    r = ref.to(dtype)
    return 2 * ((r + 0.3 - 0.3) - r).abs().max().item()


DSINK_ATOL = 1e-2   # the floor of dsink's slack (the sum over rows of float32 terms)
UNIT_ROUNDOFF = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11}


def dsink_slack_sq(out, lse, dout, sink, dtype) -> float:
    """Squared slack of dsink for D = rowsum(dO * O) taken from the stored output, rounded to
    ``dtype`` (the kernels do this, as FA2-4 do; the "pt" reference's autograd does not). Each row's D
    is off by about dD_i = 2 u ||dO_i * O_i||_2 (tests/conftest.py dsoftmax_atols), entering
    dsink_h = -sum_i exp(sink_h - lse_hi) D_hi; independent per row, so the errors add in quadrature.
    out, dout (B, Sq, Hq, Dv); lse (B, Hq, Sq) natural log including the sink; sink (Hq,). Returns
    the largest head's sum of squares, so that sequences of a packed batch add before the root."""
    f64 = torch.float64
    dd = 2 * UNIT_ROUNDOFF[dtype] * (dout.to(f64) * out.to(f64)).norm(dim=-1)        # (B, Sq, Hq)
    p_sink = torch.exp(sink.to(f64)[None, :, None] - lse.to(f64))                    # (B, Hq, Sq)
    return (p_sink * dd.transpose(1, 2)).square().sum(dim=(0, 2)).max().item()


def dsink_atol(slack_sq: float) -> float:
    return max(DSINK_ATOL, slack_sq ** 0.5)


def check_rule(name, got, ref, pt, atol=ATOL):
    """FA3's rule, with atol the larger of ``atol`` and rounding_atol in got's dtype."""
    assert not torch.isnan(got).any(), f"{name}: NaN"
    if got.numel() == 0:
        return
    inf = torch.isinf(ref)
    assert torch.equal(torch.isinf(got), inf), f"{name}: infinities differ from the reference"
    if got.dtype in (torch.bfloat16, torch.float16):
        atol = max(atol, rounding_atol(ref.masked_fill(inf, 0), got.dtype))
    got, ref, pt = (t.float().masked_fill(inf, 0) for t in (got, ref, pt))
    err = (got - ref).abs().max().item()
    bound = 2 * (pt - ref).abs().max().item() + atol
    assert err <= bound, f"{name}: max|x-ref| = {err:.3e} > 2*max|pt-ref| + atol = {bound:.3e}"


def inputs(b, sq, sk, hq, hk, d, dtype, sink=False, seed=0, dv=None):
    g = torch.Generator(device="cuda").manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, device="cuda").to(dtype)  # noqa: E731
    dv = dv or d
    q, k, v, dout = r(b, sq, hq, d), r(b, sk, hk, d), r(b, sk, hk, dv), r(b, sq, hq, dv)
    s = torch.randn(hq, generator=g, device="cuda") if sink else None
    return q, k, v, s, dout


def run(q, k, v, sink, dout, causal=False, window=(-1, -1), softcap=0.0, deterministic=False):
    """Kernel forward and backward through the public API, checked against dense()."""
    scale = q.shape[-1] ** -0.5
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    s_leaf = sink.clone().requires_grad_() if sink is not None else None
    out, lse = fa3lite.flash_attn_func(*leaves, causal=causal, window_size=window, softcap=softcap,
                                       learnable_sink=s_leaf, deterministic=deterministic, return_lse=True,
                                       backend="fa3lite")
    out.backward(dout)
    ref = dense(q, k, v, sink, dout, scale, causal, window, softcap, torch.float32)
    pt = dense(q, k, v, sink, dout, scale, causal, window, softcap, q.dtype)
    check_rule("out", out, ref[0], pt[0])
    check_rule("lse", lse, ref[1], pt[1])
    for name, leaf, r, p in zip(("dq", "dk", "dv"), leaves, ref[2:5], pt[2:5]):
        check_rule(name, leaf.grad, r, p)
    if sink is not None:
        check_rule("dsink", s_leaf.grad, ref[5], pt[5], atol=dsink_atol(dsink_slack_sq(ref[0], ref[1], dout, sink,
                                                                                         q.dtype)))
    return out, lse, [t.grad for t in leaves]


PAIRS = [(1, 1), (113, 203), (239, 1), (1, 300), (799, 130), (1024, 1023), (700, 1500)]
WINDOWS = [(64, -1), (-1, 32), (100, 0), (0, 50), (0, 0), (37, 5), (5000, 5000)]


@pytest.mark.parametrize("sq,sk", PAIRS)
@pytest.mark.parametrize("window", WINDOWS)
def test_window_d128(sq, sk, window):
    run(*inputs(1, sq, sk, 4, 2, 128, torch.bfloat16), window=window)


@pytest.mark.parametrize("d", [64, 256])
@pytest.mark.parametrize("window,causal", [((128, -1), True), ((50, 70), False), ((300, -1), False)])
def test_window_head_dims(d, window, causal):
    run(*inputs(2, 517, 611, 2, 2, d, torch.float16), causal=causal, window=window)
    run(*inputs(1, 611, 300, 4, 1, d, torch.bfloat16, seed=1), causal=causal, window=window)


@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("softcap", [5.0, 30.0])
def test_softcap(d, causal, softcap):
    run(*inputs(2, 333, 421, 4, 2, d, torch.bfloat16), causal=causal, softcap=softcap)


@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("causal", [False, True])
def test_sink(d, causal):
    run(*inputs(2, 257, 190, 4, 1, d, torch.bfloat16, sink=True), causal=causal)


@pytest.mark.parametrize("sq,sk", [(1, 1), (300, 100), (129, 1000)])
def test_all_together(sq, sk):
    # window + softcap + sink, with rows that see no key (their out is 0, their lse the sink's logit)
    run(*inputs(2, sq, sk, 4, 2, 128, torch.bfloat16, sink=True), causal=True, window=(48, -1), softcap=20.0)
    run(*inputs(1, sq, sk, 2, 2, 64, torch.float16, sink=True, seed=2), window=(10, 3), softcap=8.0)


def test_window_rows_without_keys_are_zero():
    # Sq > Sk with a window: the top rows' band lies left of key 0, so they see nothing
    q, k, v, _, dout = inputs(1, 600, 100, 2, 2, 128, torch.bfloat16)
    out, lse, grads = run(q, k, v, None, dout, window=(20, 10))
    hidden = ~visible_mask(600, 100, False, (20, 10), q.device).any(-1)
    assert hidden.sum() > 0
    assert (out[:, hidden] == 0).all() and torch.isneginf(lse[:, :, hidden]).all()
    assert (grads[0][:, hidden] == 0).all()


@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("causal,window", [(True, (200, -1)), (False, (100, 100))])
def test_window_deterministic_repeats_bitwise(d, causal, window):
    q, k, v, sink, dout = inputs(2, 1500, 1400, 4, 2, d, torch.bfloat16, sink=True)
    _, _, first = run(q, k, v, sink, dout, causal=causal, window=window, softcap=15.0, deterministic=True)
    for _ in range(3):
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        out = fa3lite.flash_attn_func(*leaves, causal=causal, window_size=window, softcap=15.0,
                                      learnable_sink=sink, deterministic=True, backend="fa3lite")
        out.backward(dout)
        for a, b in zip(first, leaves):
            assert torch.equal(a, b.grad)


def test_window_skips_key_blocks():
    # The cost grows with the window, not with S: a narrow band over 16k keys runs far faster than
    # the full mask (a behaviour check with a wide margin, not a performance target).
    q, k, v, _, _ = inputs(1, 16384, 16384, 8, 8, 128, torch.bfloat16)

    def elapsed(window):
        fa3lite.flash_attn_func(q, k, v, window_size=window, backend="fa3lite")
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            fa3lite.flash_attn_func(q, k, v, window_size=window, backend="fa3lite")
        stop.record()
        torch.cuda.synchronize()
        return start.elapsed_time(stop)

    assert elapsed((256, 0)) * 8 < elapsed((-1, -1))


@pytest.mark.parametrize("d", [96, 192])
@pytest.mark.parametrize("case", [dict(), dict(causal=True), dict(causal=True, window=(70, -1), softcap=10.0),
                                  dict(window=(30, 40), softcap=25.0)], ids=str)
def test_padded_head_dims(d, case):
    # 96 and 192 run the 128 and 256 kernels with zero padding columns (cuda_src/attention/tile_io.cuh)
    run(*inputs(2, 333, 421, 4, 2, d, torch.bfloat16, sink=True), **case)
    run(*inputs(1, 129, 64, 2, 2, d, torch.float16, seed=3), **case)


@pytest.mark.parametrize("d", [96, 192])
def test_padded_head_dims_deterministic(d):
    q, k, v, sink, dout = inputs(2, 700, 650, 4, 1, d, torch.bfloat16, sink=True)
    _, _, first = run(q, k, v, sink, dout, causal=True, deterministic=True)
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    fa3lite.flash_attn_func(*leaves, causal=True, learnable_sink=sink, deterministic=True,
                            backend="fa3lite").backward(dout)
    for a, b in zip(first, leaves):
        assert torch.equal(a, b.grad)


@pytest.mark.parametrize("case", [dict(), dict(causal=True), dict(causal=True, window=(90, -1), deterministic=True)],
                         ids=str)
def test_value_head_dim_128_beside_192(case):
    # DeepSeek's (192, 128): the 256 kernel with V and O padded from 128
    run(*inputs(2, 333, 421, 4, 2, 192, torch.bfloat16, sink=True, dv=128), **case)
    run(*inputs(1, 1, 64, 2, 2, 192, torch.float16, seed=4, dv=128), **case)
