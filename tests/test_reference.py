"""Tests of the numba reference attention (fa3lite.numba_kernels.reference) against float64 torch.

How the simulator tests are isolated: numba reads NUMBA_ENABLE_CUDASIM once, when it is first
imported, and a process that imported numba.cuda for real cannot switch. So the CPU cases here are
skipped in the ordinary pytest process, and ``test_simulator_suite`` re-runs this very file in a fresh
Python subprocess with NUMBA_ENABLE_CUDASIM=1 (only there do the ``sim``-marked cases run). The
variable never touches the parent process. Setting NUMBA_ENABLE_CUDASIM=1 for the whole pytest run
also works: the cases then run in-process and the launcher skips itself.

GPU cases (``gpu`` marker) run in the ordinary process on any CUDA GPU and are skipped without one.
"""

from __future__ import annotations

import math

import pytest
import torch
from conftest import SIMULATOR, run_simulator_suite, sim
from hypothesis import given, settings
from hypothesis import strategies as st

HAS_CUDA = (not SIMULATOR) and torch.cuda.is_available()

SIM_SUITE_TIMEOUT_S = 900
# The oracle (fp32 accumulation) must be within twice the error of torch's fp32 math plus this,
# both measured against float64 (the project's correctness rule, with fp32 as the oracle's dtype).
ATOL = 1e-5


# ----------------------------------------------------------------------------- float64 reference
def _mask(sq: int, sk: int, causal: bool, offset: int, device, local=False, local_offset=0) -> torch.Tensor:
    """(Sq, Sk) bool, True where key j is visible to query i."""
    i = torch.arange(sq, device=device)[:, None]
    j = torch.arange(sk, device=device)[None, :]
    visible = torch.ones(sq, sk, dtype=torch.bool, device=device)
    if causal:
        visible = visible & (j <= i + offset)
    if local:
        visible = visible & (j >= i + local_offset)
    return visible


def torch_attention(q, k, v, scale, causal, offset, dtype=torch.float64, *,
                    local=False, local_offset=0, softcap=0.0, sink=None):
    """Explicit softmax(z + mask, sink) v in ``dtype``; differentiable (sink too). Returns out, lse.

    q (B, Sq, Hq, D), k/v (B, Sk, Hk, D), sink None or (Hq,); z = scale q k^T, capped to
    softcap * tanh(z / softcap) when softcap > 0. The sink is an extra logit column, dropped after
    the softmax. Rows with no visible key give out 0 and lse = the sink (-inf without one).
    """
    q, k, v = (t.to(dtype) for t in (q, k, v))
    group = q.shape[2] // k.shape[2]
    k = k.repeat_interleave(group, dim=2)
    v = v.repeat_interleave(group, dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", q, k) * scale
    if softcap > 0:
        s = softcap * torch.tanh(s / softcap)
    visible = _mask(q.shape[1], k.shape[1], causal, offset, q.device, local, local_offset)
    s = s.masked_fill(~visible, -math.inf)
    logits = s
    if sink is not None:
        b, hq, sq, _ = s.shape
        logits = torch.cat([s, sink.to(dtype)[None, :, None, None].expand(b, hq, sq, 1)], dim=-1)
    lse = torch.logsumexp(logits, dim=-1)
    # exp(-inf - (-inf)) is nan on fully masked rows: those rows have no probability mass at all.
    p = torch.where(visible, torch.exp(s - lse[..., None]), torch.zeros((), dtype=dtype, device=q.device))
    p = torch.nan_to_num(p, nan=0.0)
    return torch.einsum("bhqk,bkhd->bqhd", p, v), lse


def torch_grads(dout, q, k, v, scale, causal, offset, dtype=torch.float64, *, sink=None, **features):
    """dq, dk, dv (and dsink when ``sink`` is given) of torch_attention by autograd, in ``dtype``."""
    leaves = [t.detach().to(dtype).requires_grad_() for t in (q, k, v)]
    sink_leaf = None if sink is None else sink.detach().to(dtype).requires_grad_()
    out, _ = torch_attention(*leaves, scale, causal, offset, dtype, sink=sink_leaf, **features)
    out.backward(dout.to(dtype))
    if sink_leaf is not None:
        leaves.append(sink_leaf)
    return tuple(t.grad for t in leaves)


def assert_fa_rule(name: str, got: torch.Tensor, pt: torch.Tensor, ref: torch.Tensor, atol: float = ATOL) -> None:
    """max|got - ref| <= 2 max|pt - ref| + atol, with lse-style -inf entries required to match."""
    assert got.shape == ref.shape, f"{name}: shape {tuple(got.shape)} != {tuple(ref.shape)}"
    got64, pt64 = got.double(), pt.double()
    inf = torch.isinf(ref)
    assert torch.equal(torch.isinf(got64), inf), f"{name}: -inf pattern differs from the reference"
    if ref.numel() == 0:
        return
    ref_f = ref.masked_fill(inf, 0)
    err = (got64.masked_fill(inf, 0) - ref_f).abs().max().item()
    pt_err = (pt64.masked_fill(inf, 0) - ref_f).abs().max().item()
    assert err <= 2 * pt_err + atol, f"{name}: max err {err:.3g} > 2 * {pt_err:.3g} + {atol:g}"


def make_inputs(b, sq, sk, hq, hk, d, dtype, device="cpu", strided=False, seed=0):
    """q, k, v, dout; ``strided`` builds them as (B, H, S, D) transposed to (B, S, H, D)."""
    gen = torch.Generator(device="cpu").manual_seed(seed)

    def rand(s, h):
        shape = (b, h, s, d) if strided else (b, s, h, d)
        t = torch.randn(shape, generator=gen).to(device=device, dtype=dtype)
        return t.transpose(1, 2) if strided else t

    return rand(sq, hq), rand(sk, hk), rand(sk, hk), rand(sq, hq)


def check_against_torch(q, k, v, dout, scale, causal, offset, *, _tiles=None, **features):
    """Run the oracle forward and backward and apply the FA rule to out, lse, dq, dk, dv (and dsink).

    ``features`` (local, local_offset, softcap, sink) go to both the oracle and torch_attention.
    """
    from fa3lite.numba_kernels.reference import attention_backward, attention_forward

    out, lse = attention_forward(q, k, v, scale, causal, offset, _tiles=_tiles, **features)
    assert out.dtype == torch.float32 and lse.dtype == torch.float32
    ref_out, ref_lse = torch_attention(q, k, v, scale, causal, offset, **features)
    pt_out, pt_lse = torch_attention(q, k, v, scale, causal, offset, torch.float32, **features)
    assert_fa_rule("out", out, pt_out, ref_out)
    assert_fa_rule("lse", lse, pt_lse, ref_lse)

    grads = attention_backward(dout, q, k, v, out, lse, scale, causal, offset, _tiles=_tiles, **features)
    ref_grads = torch_grads(dout, q, k, v, scale, causal, offset, **features)
    pt_grads = torch_grads(dout, q, k, v, scale, causal, offset, torch.float32, **features)
    names = ("dq", "dk", "dv") if features.get("sink") is None else ("dq", "dk", "dv", "dsink")
    assert len(grads) == len(names)
    for name, got, pt, ref in zip(names, grads, pt_grads, ref_grads):
        assert got.dtype == torch.float32
        assert_fa_rule(name, got, pt, ref)
    return (out, lse), grads


# ----------------------------------------------------------------------------- simulator launcher
@pytest.mark.skipif(SIMULATOR, reason="this process is the simulator run")
def test_simulator_suite():
    """Run this file's simulator cases in a subprocess with NUMBA_ENABLE_CUDASIM=1."""
    run_simulator_suite(__file__, SIM_SUITE_TIMEOUT_S)


# ----------------------------------------------------------------------------- simulator cases
DTYPES = st.sampled_from([torch.float16, torch.float32])


@st.composite
def problems(draw):
    hq = draw(st.sampled_from([1, 2, 4]))
    hk = draw(st.sampled_from([h for h in (1, 2, 4) if hq % h == 0]))
    sq = draw(st.integers(0, 20))
    sk = draw(st.integers(0, 20))
    causal = draw(st.booleans())
    alignment = draw(st.sampled_from(["bottom_right", "top_left", "any"]))
    if alignment == "bottom_right":
        offset = sk - sq
    elif alignment == "top_left":
        offset = 0
    else:
        offset = draw(st.integers(-sq - 2, sk + 2))
    return dict(
        b=draw(st.integers(1, 2)),
        sq=sq,
        sk=sk,
        hq=hq,
        hk=hk,
        d=draw(st.sampled_from([8, 16])),
        causal=causal,
        offset=offset,
        dtype=draw(DTYPES),
        strided=draw(st.booleans()),
        scale=draw(st.sampled_from([None, 0.3, 1.7])),
        seed=draw(st.integers(0, 2**16)),
    )


@sim
@settings(max_examples=40, deadline=None)
@given(problems())
def test_matches_float64(p):
    q, k, v, dout = make_inputs(p["b"], p["sq"], p["sk"], p["hq"], p["hk"], p["d"], p["dtype"],
                                strided=p["strided"], seed=p["seed"])
    scale = p["scale"] if p["scale"] is not None else p["d"] ** -0.5
    check_against_torch(q, k, v, dout, scale, p["causal"], p["offset"])


@sim
def test_fully_masked_rows_bottom_right():
    """Causal, Sq > Sk, bottom-right: the first Sq - Sk rows see no key -> out 0, lse -inf, no grads."""
    b, sq, sk, hq, hk, d = 1, 11, 5, 2, 1, 8
    q, k, v, dout = make_inputs(b, sq, sk, hq, hk, d, torch.float32, seed=1)
    (out, lse), (dq, dk, dv) = check_against_torch(q, k, v, dout, d**-0.5, True, sk - sq)
    masked = sq - sk
    assert torch.all(out[:, :masked] == 0)
    assert torch.all(lse[:, :, :masked] == -math.inf)
    assert torch.all(torch.isfinite(lse[:, :, masked:]))
    assert torch.all(dq[:, :masked] == 0)
    assert dk.abs().sum() > 0 and dv.abs().sum() > 0


@sim
def test_no_keys():
    """Sk == 0: every row is fully masked; dk and dv are empty."""
    q, k, v, dout = make_inputs(2, 6, 0, 2, 2, 8, torch.float16, seed=2)
    (out, lse), (dq, dk, dv) = check_against_torch(q, k, v, dout, 0.5, False, 0)
    assert torch.all(out == 0) and torch.all(lse == -math.inf) and torch.all(dq == 0)
    assert dk.shape == (2, 0, 2, 8) and dv.shape == (2, 0, 2, 8)


@sim
def test_no_queries():
    """Sq == 0: empty out/lse/dq, zero dk/dv."""
    q, k, v, dout = make_inputs(1, 0, 7, 4, 2, 8, torch.float32, seed=3)
    (out, lse), (dq, dk, dv) = check_against_torch(q, k, v, dout, 0.5, True, 7)
    assert out.shape == (1, 0, 4, 8) and lse.shape == (1, 4, 0) and dq.shape == (1, 0, 4, 8)
    assert torch.all(dk == 0) and torch.all(dv == 0)


@sim
def test_gpu_tile_geometry_in_simulator():
    """The GPU tiles (64 x 64, D chunks of 32) on a shape crossing tile edges, with D not a multiple of
    the thread columns (40) and GQA, so the GPU geometry's index math is checked on CPU too."""
    from fa3lite.numba_kernels._tiles import GPU_TILES

    q, k, v, dout = make_inputs(1, 67, 70, 2, 1, 40, torch.float16, seed=4)
    check_against_torch(q, k, v, dout, 40**-0.5, True, 70 - 67, _tiles=GPU_TILES)


FEATURE_MAX_LEN = 10


@st.composite
def feature_problems(draw):
    """problems() with a window, a softcap and a sink drawn on top (smaller: the simulator is slow)."""
    p = draw(problems())
    p["sq"], p["sk"] = min(p["sq"], FEATURE_MAX_LEN), min(p["sk"], FEATURE_MAX_LEN)
    p["local"] = draw(st.booleans())
    p["local_offset"] = draw(st.integers(-p["sq"] - 2, p["sk"] + 2))
    p["softcap"] = draw(st.sampled_from([0.0, 0.5, 3.0]))
    p["sink"] = draw(st.booleans())
    return p


# Sinks are drawn around a typical row logsumexp of these tests, so they matter but do not dominate.
SINK_MEAN = 1.0


def make_sink(hq, seed=0, device="cpu"):
    """(Hq,) fp32 sink logits."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    return (torch.randn(hq, generator=gen) + SINK_MEAN).to(device)


@sim
@settings(max_examples=6, deadline=None)
@given(feature_problems())
def test_features_match_float64(p):
    q, k, v, dout = make_inputs(p["b"], p["sq"], p["sk"], p["hq"], p["hk"], p["d"], p["dtype"],
                                strided=p["strided"], seed=p["seed"])
    scale = p["scale"] if p["scale"] is not None else p["d"] ** -0.5
    sink = make_sink(p["hq"], p["seed"]) if p["sink"] else None
    check_against_torch(q, k, v, dout, scale, p["causal"], p["offset"], local=p["local"],
                        local_offset=p["local_offset"], softcap=p["softcap"], sink=sink)


# (b, sq, sk, hq, hk, dtype, causal, causal_offset, local_offset or None (no window), softcap,
#  sink dtype or None (no sink)). Tiles in the simulator are 4 query rows x 8 keys, so the lengths
# cross and end inside tiles; sinks of any float dtype are used as fp32.
FEATURE_CASES = {
    "window_only": (1, 9, 13, 2, 1, torch.float32, False, 0, -1, 0.0, None),
    "window_only_sq_gt_sk": (1, 13, 6, 2, 2, torch.float16, False, 0, -1, 0.0, None),
    "causal_band": (1, 11, 14, 2, 1, torch.float32, True, 3, -1, 0.0, None),
    "causal_band_sq_gt_sk": (1, 13, 7, 2, 1, torch.float32, True, -6, -8, 0.0, None),
    "softcap": (2, 7, 10, 2, 1, torch.float16, True, 3, None, 0.8, None),
    "sink": (1, 9, 5, 4, 2, torch.float32, True, -4, None, 0.0, torch.bfloat16),
    "combined": (1, 10, 13, 4, 2, torch.float16, True, 3, -4, 1.0, torch.float32),
    "combined_length_1": (2, 1, 9, 2, 1, torch.float32, True, 8, 5, 2.0, torch.float64),
    "empty_band_with_sink": (1, 6, 9, 2, 1, torch.float32, True, 0, 1, 0.5, torch.float32),
}


@sim
@pytest.mark.parametrize("case", FEATURE_CASES)
def test_features_odd_shapes(case):
    """Window, band, softcap and sink on shapes that end inside tiles, with rows that see no key
    (Sq > Sk, or a band past the keys): those rows give out 0, lse = the sink (-inf without one)
    and dq 0."""
    b, sq, sk, hq, hk, dtype, causal, offset, local_offset, softcap, sink_dtype = FEATURE_CASES[case]
    d, scale = 8, 1.7
    q, k, v, dout = make_inputs(b, sq, sk, hq, hk, d, dtype, seed=10)
    sink = None if sink_dtype is None else make_sink(hq, seed=11).to(sink_dtype)
    local = local_offset is not None
    (out, lse), grads = check_against_torch(q, k, v, dout, scale, causal, offset, local=local,
                                            local_offset=local_offset or 0, softcap=softcap, sink=sink)
    keyless = ~_mask(sq, sk, causal, offset, "cpu", local, local_offset or 0).any(dim=1)
    assert torch.all(out[:, keyless] == 0) and torch.all(grads[0][:, keyless] == 0)
    if sink is None:
        assert torch.all(lse[:, :, keyless] == -math.inf)
    else:
        assert torch.equal(lse[:, :, keyless], sink.float()[None, :, None].expand(b, hq, sq)[:, :, keyless])
        # Keyless rows have out 0, so dpsum 0: they alone give the sink no gradient.
        assert torch.all((grads[3] == 0) == bool(keyless.all()))


@sim
@pytest.mark.parametrize(
    "features, error, match",
    [
        (dict(sink=torch.zeros(3)), ValueError, r"sink: expected shape \(2,\)"),
        (dict(sink=torch.zeros(1, 2)), ValueError, "sink: expected a 1-D tensor"),
        (dict(sink=torch.zeros(2, dtype=torch.int32)), TypeError, "sink: expected dtype"),
        (dict(sink=[0.0, 0.0]), TypeError, "sink: expected a torch.Tensor"),
        (dict(sink=torch.zeros(2, device="meta")), ValueError, "sink: .*device meta"),
        (dict(softcap=-1.0), ValueError, "softcap: expected a finite float >= 0"),
        (dict(softcap=math.inf), ValueError, "softcap"),
        (dict(softcap=math.nan), ValueError, "softcap"),
        (dict(softcap="1"), ValueError, "softcap"),
        (dict(local=True, local_offset=1.0), TypeError, "local_offset: expected an int"),
        (dict(local_offset=True), TypeError, "local_offset"),
    ],
)
def test_bad_features_name_the_argument(features, error, match):
    from fa3lite.numba_kernels.reference import attention_backward, attention_forward

    q, k, v, dout = make_inputs(1, 4, 4, 2, 1, 8, torch.float32)
    with pytest.raises(error, match=match):
        attention_forward(q, k, v, 0.5, True, 0, **features)
    lse = torch.zeros(1, 2, 4)
    with pytest.raises(error, match=match):
        attention_backward(dout, q, k, v, q, lse, 0.5, True, 0, **features)


@sim
@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda q, k, v: (q[0], k, v), "q: expected a 4-D tensor"),
        (lambda q, k, v: (q, torch.zeros(1, 4, 3, 8), torch.zeros(1, 4, 3, 8)), "k: expected a number of heads"),
        (lambda q, k, v: (q, k, v[:, :-1]), "v: expected the shape of k"),
        (lambda q, k, v: (q, k[..., :4], v[..., :4]), "k: expected head dim"),
        (lambda q, k, v: (q.double(), k, v), "q: expected dtype"),
        (lambda q, k, v: (q, k.int(), v), "k: expected dtype"),
    ],
)
def test_bad_inputs_name_the_argument(mutate, match):
    from fa3lite.numba_kernels.reference import attention_forward

    q, k, v, _ = make_inputs(1, 4, 4, 4, 2, 8, torch.float32)
    with pytest.raises((TypeError, ValueError), match=match):
        attention_forward(*mutate(q, k, v), 0.5, False, 0)


@sim
def test_bad_backward_inputs_name_the_argument():
    from fa3lite.numba_kernels.reference import attention_backward

    q, k, v, dout = make_inputs(1, 4, 4, 2, 2, 8, torch.float32)
    lse = torch.zeros(1, 2, 4)
    with pytest.raises(ValueError, match="lse: expected shape"):
        attention_backward(dout, q, k, v, q, lse[:, :1], 0.5, False, 0)
    with pytest.raises(ValueError, match="dout: expected shape"):
        attention_backward(dout[:, :3], q, k, v, q, lse, 0.5, False, 0)
    with pytest.raises(TypeError, match="lse: expected dtype"):
        attention_backward(dout, q, k, v, q, lse.half(), 0.5, False, 0)
    with pytest.raises(ValueError, match="softmax_scale"):
        attention_backward(dout, q, k, v, q, lse, math.nan, False, 0)


@pytest.mark.skipif(SIMULATOR or HAS_CUDA, reason="checks the error for CPU tensors without the simulator")
def test_cpu_tensor_without_simulator_is_a_clear_error():
    from fa3lite.numba_kernels.reference import attention_forward

    q, k, v, _ = make_inputs(1, 4, 4, 2, 2, 8, torch.float32)
    with pytest.raises(ValueError, match="q: expected a CUDA tensor"):
        attention_forward(q, k, v, 0.5, False, 0)


# ----------------------------------------------------------------------------- GPU cases
def _spot_reference(q, k, v, dout, scale, causal, offset, rows, keys, chunk=256):
    """float64 out/dq for query ``rows`` and dk/dv for key ``keys``, never holding Sq x Sk at once.

    Shapes: q/dout (B, Sq, Hq, D), k/v (B, Sk, Hk, D). Returns four dicts keyed by row/key index,
    values (B, H, D) float64 (H = Hq for out/dq, Hk for dk/dv).
    """
    q64, k64, v64, do64 = (t.double() for t in (q, k, v, dout))
    b, sq, hq, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    group = hq // hk
    kr = k64.repeat_interleave(group, dim=2)  # (B, Sk, Hq, D)
    vr = v64.repeat_interleave(group, dim=2)
    key_idx = torch.arange(sk, device=q.device)
    query_idx = torch.arange(sq, device=q.device)

    def probs(i0, i1):
        """P (B, Hq, i1 - i0, Sk) and lse (B, Hq, i1 - i0) for query rows i0..i1."""
        s = torch.einsum("bqhd,bkhd->bhqk", q64[:, i0:i1], kr) * scale
        if causal:
            s = s.masked_fill(key_idx[None, :] > query_idx[i0:i1, None] + offset, -math.inf)
        lse = torch.logsumexp(s, dim=-1)
        return torch.nan_to_num(torch.exp(s - lse[..., None]), nan=0.0), lse

    lse = torch.empty(b, hq, sq, dtype=torch.float64, device=q.device)
    dpsum = torch.empty_like(lse)
    for i0 in range(0, sq, chunk):
        i1 = min(sq, i0 + chunk)
        p, lse[:, :, i0:i1] = probs(i0, i1)
        o = torch.einsum("bhqk,bkhd->bqhd", p, vr)
        dpsum[:, :, i0:i1] = (do64[:, i0:i1] * o).sum(-1).transpose(1, 2)
    out, dq = {}, {}
    for i in rows:
        p, _ = probs(i, i + 1)
        out[i] = torch.einsum("bhqk,bkhd->bhd", p, vr)
        dp = torch.einsum("bhd,bkhd->bhk", do64[:, i], vr)
        ds = p[:, :, 0] * (dp - dpsum[:, :, i, None])
        dq[i] = torch.einsum("bhk,bkhd->bhd", ds, kr) * scale
    dk, dv = {}, {}
    for j in keys:
        s = torch.einsum("bqhd,bhd->bhq", q64, kr[:, j]) * scale  # column j of S: (B, Hq, Sq)
        p = torch.nan_to_num(torch.exp(s - lse), nan=0.0)
        if causal:
            p = p.masked_fill(j > query_idx + offset, 0.0)
        dp = torch.einsum("bqhd,bhd->bhq", do64, vr[:, j])
        ds = p * (dp - dpsum)
        dv[j] = torch.einsum("bhq,bqhd->bhd", p, do64).view(b, hk, group, d).sum(2)
        dk[j] = (torch.einsum("bhq,bqhd->bhd", ds, q64) * scale).view(b, hk, group, d).sum(2)
    return out, dq, dk, dv


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("mask", ["none", "bottom_right", "top_left"])
@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
def test_gpu_medium_matches_float64(dtype, mask):
    b, sq, sk, hq, hk, d = 2, 300, 517, 8, 2, 128
    q, k, v, dout = make_inputs(b, sq, sk, hq, hk, d, dtype, device="cuda", strided=True, seed=5)
    causal = mask != "none"
    offset = sk - sq if mask == "bottom_right" else 0
    check_against_torch(q, k, v, dout, d**-0.5, causal, offset)


@pytest.mark.parametrize(
    "sq, sk, causal, offset, local_offset, softcap",
    [
        (300, 517, True, 517 - 300, 517 - 300 - 100, 5.0),  # bottom-right sliding window of 101 keys
        (517, 300, False, 0, -40, 0.0),  # window only, Sq > Sk: the last rows see no key
    ],
)
@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
def test_gpu_features_match_float64(sq, sk, causal, offset, local_offset, softcap):
    """Window, softcap and sink on the GPU tiles (64 x 64), crossing many tiles and skipping some."""
    b, hq, hk, d = 2, 8, 2, 128
    q, k, v, dout = make_inputs(b, sq, sk, hq, hk, d, torch.bfloat16, device="cuda", strided=True, seed=14)
    check_against_torch(q, k, v, dout, d**-0.5, causal, offset, local=True, local_offset=local_offset,
                        softcap=softcap, sink=make_sink(hq, seed=15, device="cuda"))


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
def test_gpu_fully_masked_rows_and_determinism():
    """Sq > Sk bottom-right on the GPU tiles: masked rows give 0 / -inf; the backward is bitwise
    reproducible (no atomics)."""
    from fa3lite.numba_kernels.reference import attention_backward

    b, sq, sk, hq, hk, d = 1, 200, 70, 4, 1, 64
    q, k, v, dout = make_inputs(b, sq, sk, hq, hk, d, torch.bfloat16, device="cuda", seed=6)
    (out, lse), grads = check_against_torch(q, k, v, dout, d**-0.5, True, sk - sq)
    assert torch.all(out[:, : sq - sk] == 0) and torch.all(lse[:, :, : sq - sk] == -math.inf)
    again = attention_backward(dout, q, k, v, out, lse, d**-0.5, True, sk - sq)
    for first, second in zip(grads, again):
        assert torch.equal(first, second)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
def test_gpu_empty_sequences():
    """Sk == 0 (all rows masked) and Sq == 0 through the GPU path (empty CUDA arrays)."""
    q, k, v, dout = make_inputs(2, 5, 0, 4, 2, 64, torch.float16, device="cuda", seed=8)
    (out, lse), (dq, dk, dv) = check_against_torch(q, k, v, dout, 0.125, True, -5)
    assert torch.all(out == 0) and torch.all(lse == -math.inf) and torch.all(dq == 0)
    q, k, v, dout = make_inputs(2, 0, 9, 4, 2, 64, torch.float16, device="cuda", seed=9)
    (out, lse), (dq, dk, dv) = check_against_torch(q, k, v, dout, 0.125, False, 0)
    assert out.shape == (2, 0, 4, 64) and torch.all(dk == 0) and torch.all(dv == 0)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
def test_gpu_large_shape_runs_and_spot_checks():
    """B=1, H=8, S=8192, D=128 causal: forward and backward run; a few rows of out/dq and key rows of
    dk/dv match float64 recomputed for just those rows."""
    from fa3lite.numba_kernels.reference import attention_backward, attention_forward

    b, s, h, d = 1, 8192, 8, 128
    q, k, v, dout = make_inputs(b, s, s, h, h, d, torch.bfloat16, device="cuda", seed=7)
    scale = d**-0.5
    out, lse = attention_forward(q, k, v, scale, True, 0)
    dq, dk, dv = attention_backward(dout, q, k, v, out, lse, scale, True, 0)
    torch.cuda.synchronize()
    for t in (out, lse, dq, dk, dv):
        assert torch.all(torch.isfinite(t))
    rows, keys = [0, 63, 64, 4097, s - 1], [0, 1000, s - 1]
    ref_out, ref_dq, ref_dk, ref_dv = _spot_reference(q, k, v, dout, scale, True, 0, rows, keys)
    for i in rows:
        torch.testing.assert_close(out[:, i].double(), ref_out[i], atol=2e-5, rtol=1e-4)
        torch.testing.assert_close(dq[:, i].double(), ref_dq[i], atol=2e-5, rtol=1e-4)
    for j in keys:
        torch.testing.assert_close(dk[:, j].double(), ref_dk[j], atol=2e-5, rtol=1e-4)
        torch.testing.assert_close(dv[:, j].double(), ref_dv[j], atol=2e-5, rtol=1e-4)
