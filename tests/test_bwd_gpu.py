"""Hopper backward kernels on the GPU: FA3's accuracy rule for dq, dk, dv over odd shapes, masks,
head layouts and strides; NaN-freedom; deterministic mode.

Reference: `ref` is float32 torch math (explicit softmax with the mask, autograd), `pt` the same math
in the input dtype. A gradient passes when max|g - ref| <= 2 * max|pt - ref| + ATOL. The backward
gets out/lse from the float32 reference (out rounded to the input dtype), so these tests do not
depend on the forward kernel. Fully masked rows (causal with Sq > Sk + offset) have zero gradient
in the reference and must come out as exact zeros here, never NaN.
"""
import math

import pytest
import torch

pytestmark = pytest.mark.gpu
if not (torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)):
    pytest.skip("needs a Hopper (sm_90) GPU", allow_module_level=True)

from fa3lite.hopper import bwd as hopper_bwd  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
PAIRS = [(1, 1), (1, 239), (239, 1), (113, 203), (128, 217), (799, 3), (1023, 1024), (1024, 1023),
         (4224, 4224)]
HEADS = [(4, 4), (8, 2), (4, 1)]          # MHA, GQA (group 4), MQA
ATOL = 1e-3


def math_attention_grads(q, k, v, dout, scale, causal, offset, dtype):
    """Attention in `dtype` with autograd, (B, S, H, D) layout. Returns (out, lse, dq, dk, dv);
    out and grads in `dtype`, lse float32 (-inf for rows with no visible key)."""
    g = q.shape[2] // k.shape[2]
    qd, kd, vd = (t.detach().to(dtype).requires_grad_() for t in (q, k, v))
    kr, vr = kd.repeat_interleave(g, 2), vd.repeat_interleave(g, 2)
    s = torch.einsum("bqhd,bkhd->bhqk", qd, kr).float() * scale
    i = torch.arange(q.shape[1], device=q.device)[:, None]
    j = torch.arange(k.shape[1], device=q.device)[None, :]
    hidden = (j > i + offset) if causal else torch.zeros_like(i + j, dtype=torch.bool)
    s = s.masked_fill(hidden, -math.inf)
    lse = torch.logsumexp(s.detach(), -1)
    empty = hidden.all(-1, keepdim=True)          # rows that see no key: P = 0, no NaN anywhere
    s = s.masked_fill(empty, 0.0)
    p = torch.softmax(s, -1).masked_fill(empty, 0.0).to(dtype)
    out = torch.einsum("bhqk,bkhd->bqhd", p, vr)
    out.backward(dout.to(dtype))
    return out.detach(), lse, qd.grad, kd.grad, vd.grad


def rule_error(got, ref, pt, atol=ATOL):
    """(max|got-ref|, bound, nan_count) of FA3's rule."""
    err = (got.float() - ref.float()).abs().max().item() if got.numel() else 0.0
    bound = 2 * ((pt.float() - ref.float()).abs().max().item() if got.numel() else 0.0) + atol
    return err, bound, int(torch.isnan(got).sum().item())


def run_case(q, k, v, dout, causal, offset=None, scale=None, deterministic=False):
    """Kernel backward vs references; returns {name: (err, bound, nans)} for dq, dk, dv."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    offset = k.shape[1] - q.shape[1] if offset is None else offset
    ref = math_attention_grads(q, k, v, dout, scale, causal, offset, torch.float32)
    pt = math_attention_grads(q, k, v, dout, scale, causal, offset, q.dtype)
    out = ref[0].to(q.dtype)
    dq, dk, dv = hopper_bwd.backward(dout, q, k, v, out, ref[1], scale, causal, offset, deterministic)
    assert dq.shape == q.shape and dk.shape == k.shape and dv.shape == v.shape
    assert dq.dtype == dk.dtype == dv.dtype == q.dtype
    return {name: rule_error(g, r, p) for name, g, r, p in
            zip(("dq", "dk", "dv"), (dq, dk, dv), ref[2:], pt[2:])}


def assert_case(result):
    for name, (err, bound, nans) in result.items():
        assert nans == 0, f"{name}: {nans} NaN values"
        assert err <= bound, f"{name}: max|g-ref| = {err:.3e} > 2*max|pt-ref| + atol = {bound:.3e}"


def rand(*shape, dtype):
    return torch.randn(*shape, device="cuda", dtype=dtype)


def make_inputs(B, Sq, Sk, Hq, Hk, D, dtype):
    return (rand(B, Sq, Hq, D, dtype=dtype), rand(B, Sk, Hk, D, dtype=dtype),
            rand(B, Sk, Hk, D, dtype=dtype), rand(B, Sq, Hq, D, dtype=dtype))


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}x{p[1]}")
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", list(DTYPES), ids=list(DTYPES))
@pytest.mark.parametrize("head_dim", hopper_bwd.HEAD_DIMS)
def test_accuracy_grid(head_dim, dtype, causal, pair):
    Sq, Sk = pair
    idx = PAIRS.index(pair)
    Hq, Hk = HEADS[(idx + head_dim // 64) % len(HEADS)]
    B = 1 if Sq * Sk > 4_000_000 else 2
    torch.manual_seed(idx)
    assert_case(run_case(*make_inputs(B, Sq, Sk, Hq, Hk, head_dim, DTYPES[dtype]), causal))


@pytest.mark.parametrize("heads", HEADS, ids=["mha", "gqa", "mqa"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("head_dim", hopper_bwd.HEAD_DIMS)
def test_head_layouts(head_dim, causal, heads):
    torch.manual_seed(1)
    assert_case(run_case(*make_inputs(2, 333, 301, *heads, head_dim, torch.bfloat16), causal))


@pytest.fixture
def grouped_always(monkeypatch):
    """GQA backward plans made while it is in use sum each K/V head's group in one CTA whatever the
    grid's size (bwd.py grouped_heads; at these small shapes they would keep one query head a CTA)."""
    monkeypatch.setattr(hopper_bwd, "GROUPED_MIN_CTAS_PER_SM", 0)
    hopper_bwd._plans.clear()
    yield
    hopper_bwd._plans.clear()


@pytest.fixture
def few_ctas(monkeypatch):
    """Backward plans made while it is in use run at most 3 CTAs (FA3LITE_BWD_MAX_CTAS), so at these
    small shapes each CTA walks many tiles (bwd_scheduler.cuh): the Q/dO ring and the barriers'
    phases carried from tile to tile, the tile counter, the dQ buffers' drain."""
    monkeypatch.setenv("FA3LITE_BWD_MAX_CTAS", "3")
    hopper_bwd._plans.clear()
    yield
    hopper_bwd._plans.clear()


@pytest.mark.parametrize("heads", [(4, 4), (8, 2)], ids=["mha", "gqa"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("head_dim", [d for d in hopper_bwd.HEAD_DIMS
                                      if hopper_bwd.BwdVariant(d, "bf16", False, False).persistent])
def test_persistent_ctas_walk_many_tiles(few_ctas, head_dim, causal, heads):
    """Three CTAs take every tile from the counter: FA3's rule for every gradient on odd lengths,
    one query row, and (offset -300) key blocks no query sees, whose tiles load nothing between
    tiles that do."""
    torch.manual_seed(13)
    for Sq, Sk, offset in ((333, 901, None), (700, 150, None), (1, 600, None), (650, 650, -300)):
        q, k, v, do = make_inputs(2, Sq, Sk, *heads, head_dim, torch.bfloat16)
        assert_case(run_case(q, k, v, do, causal, offset=offset))
    grids = [plan.main_launch.grid[0] for plan in hopper_bwd._plans.values()]
    assert grids and all(g == 3 for g in grids), grids


@pytest.mark.parametrize("deterministic", [False, True], ids=["default", "det"])
@pytest.mark.parametrize("heads", [(8, 2), (4, 1)], ids=["gqa", "mqa"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("head_dim", [64, 96, 128, 256])   # BwdVariant.groupable_heads
def test_grouped_heads(grouped_always, head_dim, causal, heads, deterministic):
    """One CTA per (key block, K/V head) walking the group's query heads (bwd_scheduler.cuh): FA3's
    rule for every gradient on odd lengths (Sq != Sk, off the tiles, one query row), dK/dV in the
    input dtype straight from the kernel; deterministic mode repeats bitwise."""
    torch.manual_seed(11)
    for Sq, Sk in ((333, 301), (1, 239), (130, 600)):
        q, k, v, do = make_inputs(2, Sq, Sk, *heads, head_dim, torch.bfloat16)
        assert_case(run_case(q, k, v, do, causal, deterministic=deterministic))
    assert hopper_bwd._plans and not any(plan.dkv_f32 for plan in hopper_bwd._plans.values())
    if deterministic:
        ref = math_attention_grads(q, k, v, do, head_dim ** -0.5, causal, Sk - Sq, torch.float32)
        args = (do, q, k, v, ref[0].to(q.dtype), ref[1], head_dim ** -0.5, causal, Sk - Sq, True)
        first = hopper_bwd.backward(*args)
        for _ in range(3):
            assert all(torch.equal(a, b) for a, b in zip(hopper_bwd.backward(*args), first))


@pytest.mark.parametrize("offset", [0, -100, 150])
def test_causal_offsets(offset):
    """Top-left (0), more queries than visible keys (-100: leading rows fully masked), and more."""
    torch.manual_seed(2)
    assert_case(run_case(*make_inputs(1, 300, 260, 2, 2, 128, torch.bfloat16), True, offset=offset))


def test_noncontiguous_dout():
    torch.manual_seed(3)
    q, k, v, _ = make_inputs(2, 257, 190, 4, 4, 128, torch.bfloat16)
    dout_t = rand(2, 4, 257, 128, dtype=torch.bfloat16).transpose(1, 2)      # TMA-able odd strides
    assert_case(run_case(q, k, v, dout_t, True))
    dout_m = rand(2 * 257 * 4 * 128 + 1, dtype=torch.bfloat16)[1:].view(2, 257, 4, 128)  # misaligned
    assert_case(run_case(q, k, v, dout_m, False))


def test_packed_qkv_views():
    torch.manual_seed(4)
    qkv = rand(2, 311, 3, 4, 64, dtype=torch.float16)
    q, k, v = qkv.unbind(2)
    assert_case(run_case(q, k, v, rand(2, 311, 4, 64, dtype=torch.float16), False))
    assert_case(run_case(q, k, v, rand(2, 311, 4, 64, dtype=torch.float16), True))


def test_no_nan_fully_masked_rows():
    """Rows before the first visible key get exact zero dq; keys no query sees get zero dk/dv."""
    torch.manual_seed(5)
    q, k, v, do = make_inputs(1, 200, 64, 2, 2, 64, torch.bfloat16)
    offset = -150                                   # rows 0..149 see nothing
    ref = math_attention_grads(q, k, v, do, 0.125, True, offset, torch.float32)
    dq, dk, dv = hopper_bwd.backward(do, q, k, v, ref[0].to(q.dtype), ref[1], 0.125, True, offset, False)
    assert not any(torch.isnan(g).any() for g in (dq, dk, dv))
    assert (dq[:, :150] == 0).all()


def _poison_allocator(nbytes=256 << 20):
    """Fill memory the caching allocator will hand out again with NaN (its freed block is reused)."""
    torch.full((nbytes // 4,), float("nan"), device="cuda")
    torch.cuda.synchronize()


@pytest.mark.parametrize("deterministic", [False, True], ids=["claims", "turns"])
@pytest.mark.parametrize("offset", [None, -300], ids=["bottom_right", "rows_see_nothing"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("head_dim", hopper_bwd.HEAD_DIMS)
def test_dq_first_tiles_on_poisoned_memory(head_dim, causal, offset, deterministic):
    """Where the preprocess does not zero the dQ accumulator (bwd.stores_first: narrow calls, and wide
    deterministic ones, whose turn keeper zeroes each block's part at turn 0; bwd_dq.cuh), each query
    block's first tile is stored (claims, or the first turn) and later ones added, and a block no key
    block visits comes out as zeros. The accumulator's memory held NaN before; many key blocks race
    for each query block."""
    torch.manual_seed(12)
    if offset is not None and not causal:
        pytest.skip("the offset only moves a causal mask")
    q, k, v, do = make_inputs(2, 1100, 1300, 4, 4, head_dim, torch.bfloat16)
    _poison_allocator()
    result = run_case(q, k, v, do, causal, offset, deterministic=deterministic)
    assert_case(result)
    if offset is not None:
        scale = head_dim ** -0.5
        ref = math_attention_grads(q, k, v, do, scale, True, offset, torch.float32)
        _poison_allocator()
        dq = hopper_bwd.backward(do, q, k, v, ref[0].to(q.dtype), ref[1], scale, True, offset, deterministic)[0]
        assert (dq[:, :-offset] == 0).all() and not torch.isnan(dq).any()


@pytest.mark.parametrize("deterministic", [False, True], ids=["default", "deterministic"])
@pytest.mark.parametrize("head_dim", (64, 128, 256))
def test_backward_replays_in_a_cuda_graph(head_dim, deterministic):
    """The backward's three launches captured in a CUDA graph (as a training step under
    torch.compile's reduce-overhead mode does) and replayed on new inputs: the gradients of the eager
    call on those inputs (bitwise where the call is deterministic: dk/dv always, dq with turns)."""
    torch.manual_seed(21)
    scale, offset = head_dim ** -0.5, 200
    q, k, v, do = make_inputs(2, 700, 900, 4, 2, head_dim, torch.bfloat16)

    def refresh():   # new inputs in the captured tensors, with out and lse to match
        for t in (q, k, v, do):
            t.copy_(torch.randn_like(t))
        ref = math_attention_grads(q, k, v, do, scale, True, offset, torch.float32)
        return ref[0].to(q.dtype), ref[1]

    out, lse = refresh()
    args = (do, q, k, v, out, lse, scale, True, offset, deterministic)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):   # the plan and its modules before the capture
        hopper_bwd.backward(*args)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = hopper_bwd.backward(*args)
    for _ in range(2):
        new_out, new_lse = refresh()
        out.copy_(new_out)
        lse.copy_(new_lse)
        graph.replay()
        eager = hopper_bwd.backward(*args)
        torch.cuda.synchronize()
        for name, a, b in zip(("dq", "dk", "dv"), captured, eager):
            assert not torch.isnan(a).any(), name
            if deterministic or name != "dq":
                assert torch.equal(a, b), f"{name} of the replay differs from the eager call's"
            else:
                torch.testing.assert_close(a, b, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("head_dim", hopper_bwd.HEAD_DIMS)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_deterministic_bitwise(head_dim, causal):
    torch.manual_seed(6)
    q, k, v, do = make_inputs(2, 1000, 1100, 4, 2, head_dim, torch.bfloat16)
    ref = math_attention_grads(q, k, v, do, head_dim ** -0.5, causal, 100, torch.float32)
    out, lse = ref[0].to(q.dtype), ref[1]
    first = hopper_bwd.backward(do, q, k, v, out, lse, head_dim ** -0.5, causal, 100, True)
    for _ in range(99):
        again = hopper_bwd.backward(do, q, k, v, out, lse, head_dim ** -0.5, causal, 100, True)
        for a, b in zip(first, again):
            assert torch.equal(a, b), "deterministic backward differs between runs"


@pytest.mark.parametrize("pair", [(700, 1500), (1500, 700), (1000, 1000), (1, 1500)],
                         ids=lambda p: f"{p[0]}x{p[1]}")
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("head_dim", hopper_bwd.HEAD_DIMS)
def test_deterministic_accuracy_over_many_ctas(head_dim, causal, pair):
    """deterministic=True with more CTAs than SMs (the turn order must hold across waves: causal adds in
    descending key-block order, launched descending), bottom-right causal with Sq < Sk, Sq > Sk (rows
    that see nothing) and one query row: FA3's rule for every gradient, bitwise equal on a repeat."""
    Sq, Sk = pair
    torch.manual_seed(9)
    q, k, v, do = make_inputs(2, Sq, Sk, 8, 2, head_dim, torch.bfloat16)
    scale, offset = head_dim ** -0.5, Sk - Sq
    ref = math_attention_grads(q, k, v, do, scale, causal, offset, torch.float32)
    pt = math_attention_grads(q, k, v, do, scale, causal, offset, q.dtype)
    out, lse = ref[0].to(q.dtype), ref[1]
    got = hopper_bwd.backward(do, q, k, v, out, lse, scale, causal, offset, True)
    assert_case({name: rule_error(g, r, p) for name, g, r, p in zip(("dq", "dk", "dv"), got, ref[2:], pt[2:])})
    again = hopper_bwd.backward(do, q, k, v, out, lse, scale, causal, offset, True)
    assert all(torch.equal(a, b) for a, b in zip(got, again)), "deterministic backward differs between runs"


# ------------------------------------------------ only the gradients asked for (need_dq / need_dkv)

NEEDS = [(True, False), (False, True)]


def _partial_and_full(q, k, v, do, causal, need_dq, need_dkv, deterministic):
    """(ref, pt, partial grads, full grads) of one problem; out/lse from the float32 reference."""
    scale, offset = q.shape[-1] ** -0.5, k.shape[1] - q.shape[1]
    ref = math_attention_grads(q, k, v, do, scale, causal, offset, torch.float32)
    pt = math_attention_grads(q, k, v, do, scale, causal, offset, q.dtype)
    out, lse = ref[0].to(q.dtype), ref[1]
    part = hopper_bwd.backward(do, q, k, v, out, lse, scale, causal, offset, deterministic,
                               need_dq=need_dq, need_dkv=need_dkv)
    full = hopper_bwd.backward(do, q, k, v, out, lse, scale, causal, offset, deterministic)
    return ref, pt, part, full


@pytest.mark.parametrize("needs", NEEDS, ids=["dq_only", "dkv_only"])
@pytest.mark.parametrize("heads", [(4, 4), (8, 2)], ids=["mha", "gqa"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("head_dim", hopper_bwd.HEAD_DIMS)
def test_partial_gradients(head_dim, causal, heads, needs):
    """Odd shapes (no tile multiples). The grads asked for pass FA3's rule, the others are None; dk/dv
    are bitwise those of the full backward (same operations in the same order), dq only within the
    rule (its additions are unordered without deterministic=True)."""
    need_dq, need_dkv = needs
    torch.manual_seed(7)
    q, k, v, do = make_inputs(2, 200, 333, *heads, head_dim, torch.bfloat16)
    ref, pt, part, full = _partial_and_full(q, k, v, do, causal, need_dq, need_dkv, False)
    wanted = (need_dq, need_dkv, need_dkv)
    results = {}
    for name, want, g, f, t, r, p in zip(("dq", "dk", "dv"), wanted, part, full, (q, k, v), ref[2:], pt[2:]):
        if not want:
            assert g is None, f"{name} was not asked for"
            continue
        assert g.shape == t.shape and g.dtype == q.dtype and g.is_contiguous()
        results[name] = rule_error(g, r, p)
        if name != "dq":
            assert torch.equal(g, f), f"{name} differs from the full backward's"
    assert_case(results)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("head_dim", hopper_bwd.HEAD_DIMS)
def test_dq_only_deterministic(head_dim, causal):
    """deterministic=True: the dq-only kernel adds the same dQ tiles in the same key-block order as the
    full one, so dq is bitwise equal to the full backward's and between runs."""
    torch.manual_seed(8)
    q, k, v, do = make_inputs(2, 1000, 1100, 4, 2, head_dim, torch.bfloat16)
    ref, pt, part, full = _partial_and_full(q, k, v, do, causal, True, False, True)
    dq, dk, dv = part
    assert dk is None and dv is None
    assert_case({"dq": rule_error(dq, ref[2], pt[2])})
    assert torch.equal(dq, full[0]), "deterministic dq-only backward differs from the full backward's dq"
    scale, offset = head_dim ** -0.5, 1100 - 1000
    for _ in range(9):
        again = hopper_bwd.backward(do, q, k, v, ref[0].to(q.dtype), ref[1], scale, causal, offset, True,
                                    need_dq=True, need_dkv=False)
        assert torch.equal(again[0], dq), "deterministic dq-only backward differs between runs"
