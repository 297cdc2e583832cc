"""Hopper forward kernel on the GPU: FA3's accuracy rule over odd shapes, layouts, masks and sizes.

Reference: `ref` is the fp32 computation, `pt` the same math in the input dtype (scores, softmax
and P.V rounded to it); the kernel passes when max|out - ref| <= 2 * max|pt - ref| + atol.
"""
import math

import pytest
import torch

from fa3lite.hopper import fwd as hopper

pytestmark = pytest.mark.gpu
if not (torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)):
    pytest.skip("needs a Hopper (sm_90) GPU", allow_module_level=True)

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
PAIRS = [(1, 1), (1, 239), (239, 1), (113, 203), (128, 217), (799, 3), (1023, 1024), (1024, 1023),
         (4224, 4224), (8192, 8192)]
HEADS = [(4, 4), (8, 2), (4, 1)]          # MHA, GQA (4), MQA
ATOL_OUT = 1e-3
ATOL_LSE = 1e-3


def math_attention(q, k, v, scale, causal, offset, dtype):
    """Attention in `dtype` (fp32 for the reference), (B, S, H, D) layout; returns (out, lse)."""
    g = q.shape[2] // k.shape[2]
    qd, kd, vd = (t.to(dtype) for t in (q, k, v))
    kd, vd = kd.repeat_interleave(g, 2), vd.repeat_interleave(g, 2)
    s = torch.einsum("bqhd,bkhd->bhqk", qd, kd) * scale
    if causal:
        i = torch.arange(q.shape[1], device=q.device)[:, None]
        j = torch.arange(k.shape[1], device=q.device)[None, :]
        s = s.masked_fill(j > i + offset, -math.inf)
    lse = torch.logsumexp(s.float(), -1)
    p = torch.softmax(s.float(), -1).nan_to_num(0.0).to(dtype)
    return torch.einsum("bhqk,bkhd->bqhd", p, vd), lse


def check_rule(got, ref, pt, atol, what):
    err = (got.float() - ref).abs().max().item()
    bound = 2 * (pt.float() - ref).abs().max().item() + atol
    assert err <= bound, f"{what}: max|out-ref| = {err:.3e} > 2*max|pt-ref| + atol = {bound:.3e}"


def check_lse(lse, ref_lse, pt_lse):
    fin = torch.isfinite(ref_lse)
    assert torch.equal(torch.isfinite(lse), fin), "lse finite where the reference is not (or vice versa)"
    assert (lse[~fin] == -math.inf).all(), "fully masked rows must have lse = -inf"
    if fin.any():
        check_rule(lse[fin], ref_lse[fin], pt_lse[fin], ATOL_LSE, "lse")


def run_and_check(q, k, v, causal, offset=None, scale=None):
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    offset = k.shape[1] - q.shape[1] if offset is None else offset
    out, lse = hopper.forward(q, k, v, scale, causal, offset)
    ref, ref_lse = math_attention(q, k, v, scale, causal, offset, torch.float32)
    pt, pt_lse = math_attention(q, k, v, scale, causal, offset, q.dtype)
    assert out.shape == q.shape and lse.shape == (q.shape[0], q.shape[2], q.shape[1])
    assert not torch.isnan(out).any(), "NaN in the output"
    check_rule(out, ref, pt, ATOL_OUT, "out")
    check_lse(lse, ref_lse, pt_lse)
    return out, lse


def rand(*shape, dtype):
    return torch.randn(*shape, device="cuda", dtype=dtype)


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}x{p[1]}")
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", list(DTYPES), ids=list(DTYPES))
@pytest.mark.parametrize("head_dim", [64, 128, 256])
def test_accuracy_grid(head_dim, dtype, causal, pair):
    Sq, Sk = pair
    idx = PAIRS.index(pair)
    Hq, Hk = HEADS[(idx + head_dim // 64) % len(HEADS)]
    big = Sq * Sk > 4_000_000
    B = 1 if big else 1 + (idx * 4 + head_dim) % 9
    if big:
        Hq, Hk = Hq // 2 or 1, max(Hk // 2, 1)
    dt = DTYPES[dtype]
    torch.manual_seed(1000 * idx + head_dim + causal)
    run_and_check(rand(B, Sq, Hq, head_dim, dtype=dt), rand(B, Sk, Hk, head_dim, dtype=dt),
                  rand(B, Sk, Hk, head_dim, dtype=dt), causal)


@pytest.mark.parametrize("shape", [(3, 700, 1037, 16, 4), (2, 1500, 300, 16, 8), (1, 4100, 4100, 8, 8)],
                         ids=["odd", "more-queries", "long"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("head_dim", [64, 128, 256])
def test_persistent_grid_over_many_tiles(head_dim, causal, shape):
    # More tiles than SMs: a persistent variant's CTAs each take several tiles (the K/V ring, Q's
    # barriers and the pingpong turns carry over between them); with causal and Sq > Sk the leading
    # query blocks see no key at all.
    B, Sq, Sk, Hq, Hk = shape
    torch.manual_seed(head_dim + Sq + causal)
    dt = torch.bfloat16
    q, k, v = rand(B, Sq, Hq, head_dim, dtype=dt), rand(B, Sk, Hk, head_dim, dtype=dt), rand(B, Sk, Hk, head_dim, dtype=dt)
    run_and_check(q, k, v, causal)
    plan = hopper.forward_plan(q, k, v, head_dim ** -0.5, causal, Sk - Sq)
    variant = hopper.fwd_variant(q, causal, Sk)
    tiles = -(-Sq // variant.block_m) * Hq * B
    sms = torch.cuda.get_device_properties(q.device).multi_processor_count
    assert tiles > sms
    assert plan.grid[0] == hopper.fwd_grid(variant, tiles, sms)
    if variant.tile.persistent:
        assert plan.grid[0] == sms
    # a kernel storing O from registers reads no O map: the plan makes none (q, k and v's only)
    assert len(plan.makers) == (3 if variant.direct_o else 4)


@pytest.mark.parametrize("offset", [0, -50, 37])
def test_causal_offsets_and_fully_masked_rows(offset):
    # offset 0 is SDPA's top-left alignment; a negative one leaves the first rows with no key.
    torch.manual_seed(offset + 7)
    q, k, v = rand(2, 150, 4, 128, dtype=torch.bfloat16), rand(2, 90, 4, 128, dtype=torch.bfloat16), \
        rand(2, 90, 4, 128, dtype=torch.bfloat16)
    out, lse = run_and_check(q, k, v, True, offset=offset)
    if offset < 0:
        assert (out[:, : -offset] == 0).all() and (lse[:, :, : -offset] == -math.inf).all()


def test_bottom_right_with_more_queries_than_keys_zeroes_leading_rows():
    q, k, v = rand(1, 300, 2, 64, dtype=torch.float16), rand(1, 100, 2, 64, dtype=torch.float16), \
        rand(1, 100, 2, 64, dtype=torch.float16)
    out, lse = run_and_check(q, k, v, True)
    # bottom-right: row i sees keys j <= i - 200, so rows 0..199 see none
    assert (out[:, :200] == 0).all() and (lse[:, :, :200] == -math.inf).all()
    assert torch.isfinite(lse[:, :, 200:]).all()


def test_no_keys_gives_zero_and_minus_inf():
    q = rand(2, 33, 4, 128, dtype=torch.bfloat16)
    k = v = torch.empty(2, 0, 4, 128, device="cuda", dtype=torch.bfloat16)
    out, lse = hopper.forward(q, k, v, 0.1, False, 0)
    assert (out == 0).all() and (lse == -math.inf).all()


def test_empty_queries():
    q = rand(2, 0, 4, 64, dtype=torch.bfloat16)
    k = v = rand(2, 5, 4, 64, dtype=torch.bfloat16)
    out, lse = hopper.forward(q, k, v, 0.1, True, 5)
    assert out.shape == (2, 0, 4, 64) and lse.shape == (2, 4, 0)


@pytest.mark.parametrize("layout", ["packed_qkv", "bhsd_transposed", "sliced_heads"])
def test_strided_inputs(layout):
    torch.manual_seed(3)
    B, S, H, D = 2, 333, 4, 128
    if layout == "packed_qkv":
        qkv = rand(B, S, 3, H, D, dtype=torch.bfloat16)
        q, k, v = qkv.unbind(2)
    elif layout == "bhsd_transposed":
        q, k, v = (rand(B, H, S, D, dtype=torch.bfloat16).transpose(1, 2) for _ in range(3))
    else:
        big = rand(B, S, 2 * H, D, dtype=torch.bfloat16)
        q, k, v = big[:, :, ::2], big[:, :, 1::2], big[:, :, H:]
    assert not q.is_contiguous()
    run_and_check(q, k, v, True)


def test_out_of_bounds_rows_never_written_inside_a_larger_buffer(monkeypatch):
    # Give the kernel an output that is a view into a bigger NaN buffer (rows past Sq are a guard
    # band): it must fill the view and leave the band alone. The launch plan normally makes a
    # contiguous out; here its O map is rebuilt over the view and the plan handed the view.
    from fa3lite.runtime import tma

    torch.manual_seed(6)
    B, Sq, Sk, H, D = 2, 70, 130, 2, 128
    backing = torch.full((B, Sq + 64, H, D), float("nan"), device="cuda", dtype=torch.bfloat16)
    view = backing[:, :Sq]
    q, k, v = rand(B, Sq, H, D, dtype=torch.bfloat16), rand(B, Sk, H, D, dtype=torch.bfloat16), \
        rand(B, Sk, H, D, dtype=torch.bfloat16)
    plan = hopper._FwdPlan(q, k, v, D ** -0.5, True, Sk - Sq)
    geometry = tma.bshd_geometry(view.shape, view.stride(), view.element_size(), 64, 1)
    plan.makers = plan.makers[:3] + (tma.MapMaker(view.dtype, geometry, plan.dev),)
    monkeypatch.setattr(hopper._FwdPlan, "_out", lambda self, q: view)
    out, _ = plan(q, k, v)
    monkeypatch.undo()
    assert out.data_ptr() == backing.data_ptr()
    assert not torch.isnan(backing[:, :Sq]).any(), "an element inside the output was not written"
    assert torch.isnan(backing[:, Sq:]).all(), "the kernel wrote past seqlen_q"
    ref, _ = math_attention(q, k, v, D ** -0.5, True, Sk - Sq, torch.float32)
    pt, _ = math_attention(q, k, v, D ** -0.5, True, Sk - Sq, q.dtype)
    check_rule(out, ref, pt, ATOL_OUT, "out")


@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("nan_key", range(296, 304))
def test_a_nan_key_makes_every_row_that_sees_it_nan(d, nan_key):
    # A NaN score must reach its row's output whatever path its row max, exponent and row sum take
    # (softmax.cuh); the eight keys put it at every position of a thread's 8-column score group.
    # Rows before the key never see it (causal) and stay exact, as does the other head.
    torch.manual_seed(nan_key)
    S, H = 700, 2
    q, k, v = (rand(1, S, H, d, dtype=torch.bfloat16) for _ in range(3))
    k[0, nan_key, 1] = float("nan")
    out, _ = hopper.forward(q, k, v, d ** -0.5, True, 0)
    assert torch.isnan(out[0, nan_key:, 1]).all(), "a row that sees the NaN key is not NaN"
    assert not torch.isnan(out[0, :nan_key]).any() and not torch.isnan(out[0, :, 0]).any(), "NaN past its rows"
    ref, _ = math_attention(q[:, :nan_key], k[:, :nan_key], v[:, :nan_key], d ** -0.5, True, 0, torch.float32)
    pt, _ = math_attention(q[:, :nan_key], k[:, :nan_key], v[:, :nan_key], d ** -0.5, True, 0, q.dtype)
    check_rule(out[:, :nan_key], ref, pt, ATOL_OUT, "out")


def test_bitwise_deterministic():
    torch.manual_seed(8)
    q, k, v = (rand(2, 1000, 8, 128, dtype=torch.bfloat16) for _ in range(3))
    a = hopper.forward(q, k, v, 0.08, True, 0)
    b = hopper.forward(q, k, v, 0.08, True, 0)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_many_heads_and_past_2_31_elements():
    # B * H = 135168 > 65535 (grid limits) and q has 2^31 + 2^24 elements (64-bit offsets).
    B, S, H, D = 33, 128, 4096, 128
    q = rand(B, S, H, D, dtype=torch.bfloat16)
    assert q.numel() > 2**31
    k = rand(B, S, 1, D, dtype=torch.bfloat16)
    v = rand(B, S, 1, D, dtype=torch.bfloat16)
    out, lse = hopper.forward(q, k, v, D ** -0.5, True, 0)
    for b, h in [(0, 0), (B // 2, H // 3), (B - 1, H - 1)]:
        qs = q[b:b + 1, :, h:h + 1]
        ref, ref_lse = math_attention(qs, k[b:b + 1], v[b:b + 1], D ** -0.5, True, 0, torch.float32)
        pt, pt_lse = math_attention(qs, k[b:b + 1], v[b:b + 1], D ** -0.5, True, 0, q.dtype)
        check_rule(out[b:b + 1, :, h:h + 1], ref, pt, ATOL_OUT, f"out[{b},:,{h}]")
        check_lse(lse[b:b + 1, h:h + 1], ref_lse, pt_lse)


def test_misaligned_base_is_refused_not_loaded():
    buf = rand(1 * 64 * 2 * 64 + 1, dtype=torch.bfloat16)
    q = buf[1:].view(1, 64, 2, 64)         # base 2 bytes past a 16-byte boundary
    k = v = rand(1, 64, 2, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="16-byte"):
        hopper.forward(q, k, v, 0.1, False, 0)
