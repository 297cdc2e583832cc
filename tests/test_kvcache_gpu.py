"""flash_attn_with_kvcache on the Hopper kernels (backend="fa3lite": a fallback would raise): bf16 and
fp16, decode (one query row) and a few rows, GQA, contiguous caches with cache_batch_idx and
cache_leftpad, paged caches with shuffled pages of 16, 64 and 256 rows, rotary, windows; FA3's rule
for out and lse against the float64 reference of test_kvcache.py, the cache after the append exact
(rotary: within rounding), NaN in every cache row and page no sequence uses. Also: replayed inside a
CUDA graph with new cache lengths, and under torch.compile."""
import math

import pytest
import torch

pytestmark = pytest.mark.gpu
if not (torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)):
    pytest.skip("needs a Hopper (sm_90) GPU", allow_module_level=True)

import fa3lite  # noqa: E402
from fa3lite import fallback, hopper  # noqa: E402
from test_features_gpu import check_rule  # noqa: E402
from test_kvcache import fill, make, reference  # noqa: E402

SCALE = 128 ** -0.5
ROTARY_POSITIONS = 1024   # beyond every cache's capacity here (700, or 3 pages of 256)


def inputs(dtype, b=3, sq=1, s_new=1, s_cache=700, paged=None, seed=0, hq=8, hk=2):
    x = make(b=b, sq=sq, hq=hq, hk=hk, d=128, s_cache=s_cache, s_new=s_new, paged=paged, rd=64, seed=seed,
             dtype=torch.float32, ro_len=ROTARY_POSITIONS)
    gen = x.pop("gen")
    x = {name: (t.to("cuda", dtype if t.is_floating_point() else t.dtype) if isinstance(t, torch.Tensor) else t)
         for name, t in x.items()}
    x["cos"], x["sin"] = x["cos"].float(), x["sin"].float()
    x["gen"] = gen
    return x


def run_and_check(x, seqlens, lengths, causal=True, window=(-1, -1), rotary=False, batch_idx=None, leftpad=None,
                  interleaved=True, num_splits=0):
    fill(x, x["page_table"], lengths, batch_idx, leftpad)
    cos, sin = (x["cos"], x["sin"]) if rotary else (None, None)
    args = (x["q"], x["k_cache"], x["v_cache"], x["k"], x["v"], cos, sin, seqlens, batch_idx, leftpad,
            x["page_table"], causal, window, interleaved, SCALE)
    ref_out, ref_lse, want_k, want_v = reference(*args)
    pt_out, pt_lse, _, _ = reference(*args, dtype=x["q"].dtype)
    def call():
        return fa3lite.flash_attn_with_kvcache(
            x["q"], x["k_cache"], x["v_cache"], x["k"], x["v"], rotary_cos=cos, rotary_sin=sin, cache_seqlens=seqlens,
            cache_batch_idx=batch_idx, cache_leftpad=leftpad, page_table=x["page_table"], softmax_scale=SCALE,
            causal=causal, window_size=window, rotary_interleaved=interleaved, num_splits=num_splits,
            return_softmax_lse=True, backend="fa3lite")

    out, lse = call()
    # The repeat goes straight to the signature's launch plan (a step's packed rows read in place from
    # q, out / lse written in its layout: kvcache.step_rows); it appends the same rows at the same
    # positions again, so the result is the first call's (q packed into a copy), bit for bit.
    again = call()
    assert torch.equal(again[0], out) and torch.equal(again[1], lse)
    if rotary:   # the rotation rounds once to the input dtype either way
        torch.testing.assert_close(x["k_cache"], want_k, equal_nan=True, atol=1e-2, rtol=1e-2)
    else:
        assert torch.equal(x["k_cache"].nan_to_num(7.0), want_k.nan_to_num(7.0))
    assert torch.equal(x["v_cache"].nan_to_num(7.0), want_v.nan_to_num(7.0))
    check_rule("out", out, ref_out, pt_out)
    check_rule("lse", lse, ref_lse.float(), pt_lse.float())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("sq, s_new", [(1, 1), (4, 4), (3, 0)])
def test_contiguous(dtype, sq, s_new):
    x = inputs(dtype, sq=sq, s_new=s_new)
    lengths = [0, 300, 700 - s_new]
    run_and_check(x, torch.tensor(lengths, dtype=torch.int32, device="cuda"), lengths)


@pytest.mark.parametrize("page_size", [16, 64, 256])
@pytest.mark.parametrize("rotary, interleaved", [(False, True), (True, True), (True, False)])
def test_paged(page_size, rotary, interleaved):
    pages = -(-700 // page_size)
    x = inputs(torch.bfloat16, sq=4, s_new=4, paged=(pages, page_size))
    lengths = [1, page_size - 2, pages * page_size - 4]    # appends crossing a page boundary
    run_and_check(x, torch.tensor(lengths, dtype=torch.int32, device="cuda"), lengths, rotary=rotary,
                  interleaved=interleaved)


@pytest.mark.parametrize("window, causal", [((64, -1), True), ((100, 20), False), ((-1, -1), False)])
def test_batch_idx_leftpad_windows(window, causal):
    x = inputs(torch.bfloat16, sq=2, s_new=2)
    lengths = [650, 17, 300]
    batch_idx = torch.tensor([3, 1, 0], dtype=torch.int32, device="cuda")
    leftpad = torch.tensor([5, 0, 299], dtype=torch.int32, device="cuda")
    run_and_check(x, torch.tensor(lengths, dtype=torch.int32, device="cuda"), lengths, causal=causal, window=window,
                  rotary=True, batch_idx=batch_idx, leftpad=leftpad)


def test_int_cache_seqlens_and_full_cache():
    x = inputs(torch.bfloat16, sq=1, s_new=0)
    run_and_check(x, 700, [700] * 3)
    x = inputs(torch.bfloat16, sq=1, s_new=0, seed=1)
    fill(x, None, [700] * 4)
    out = fa3lite.flash_attn_with_kvcache(x["q"], x["k_cache"], x["v_cache"], causal=True, backend="fa3lite")
    want = fa3lite.flash_attn_with_kvcache(x["q"], x["k_cache"], x["v_cache"], cache_seqlens=700, causal=True,
                                           backend="fa3lite")
    assert torch.equal(out, want)


def test_cuda_graph_replay_with_new_lengths():
    x = inputs(torch.bfloat16, sq=1, s_new=1)
    fill(x, None, [700] * 3)
    seqlens = torch.tensor([10, 20, 30], dtype=torch.int32, device="cuda")
    k_cache, v_cache = x["k_cache"], x["v_cache"]

    def step():
        return fa3lite.flash_attn_with_kvcache(x["q"], k_cache, v_cache, x["k"], x["v"], cache_seqlens=seqlens,
                                               causal=True, backend="fa3lite")

    step()   # compile and load outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = step()
    for lengths in ([100, 5, 698], [0, 650, 1]):
        seqlens.copy_(torch.tensor(lengths, dtype=torch.int32))
        graph.replay()
        torch.cuda.synchronize()
        eager = step()
        assert torch.equal(out, eager)


def test_torch_compile():
    x = inputs(torch.bfloat16, sq=2, s_new=2)
    fill(x, None, [700] * 3)
    seqlens = torch.tensor([10, 200, 600], dtype=torch.int32, device="cuda")
    k0, v0 = x["k_cache"].clone(), x["v_cache"].clone()
    eager = fa3lite.flash_attn_with_kvcache(x["q"], x["k_cache"], x["v_cache"], x["k"], x["v"], cache_seqlens=seqlens,
                                           causal=True)
    k1, v1 = k0.clone(), v0.clone()
    compiled = torch.compile(fa3lite.flash_attn_with_kvcache)
    got = compiled(x["q"], k1, v1, x["k"], x["v"], cache_seqlens=seqlens, causal=True)
    assert torch.equal(got, eager)
    assert torch.equal(k1.nan_to_num(7.0), x["k_cache"].nan_to_num(7.0))
    assert not math.isnan(got.float().sum().item())


@pytest.mark.parametrize("sq, causal, window", [(1, True, (-1, -1)), (3, False, (-1, -1)), (4, True, (-1, -1)),
                                                (4, True, (130, -1)), (5, False, (200, 2))])
def test_pack_gqa_matches_unpacked(sq, causal, window):
    """Decode and speculative steps with the query heads of each K/V head packed into one head's rows
    (the default with GQA; each row keeps its position's causal or window mask) against
    pack_gqa=False, on the kernels. One split count both ways: the heuristic's pick follows the tile
    count, which packing changes, and another count sums the keys in another order."""
    x = inputs(torch.bfloat16, sq=sq, s_new=0)
    fill(x, None, [700, 1, 333, 0])
    seqlens = torch.tensor([700, 1, 333], dtype=torch.int32, device="cuda")
    got = [fa3lite.flash_attn_with_kvcache(x["q"], x["k_cache"], x["v_cache"], cache_seqlens=seqlens, causal=causal,
                                           window_size=window, pack_gqa=pack, return_softmax_lse=True,
                                           num_splits=3, backend="fa3lite")
           for pack in (False, None)]
    torch.testing.assert_close(got[1][0], got[0][0])
    torch.testing.assert_close(got[1][1], got[0][1])


@pytest.mark.parametrize("hq, hk, sq, num_splits", [(6, 2, 1, 0), (6, 2, 4, 0), (14, 2, 9, 0), (8, 2, 20, 3),
                                                    (16, 1, 5, 2), (8, 8, 3, 0)])
def test_steps_read_in_place_for_any_group(hq, hk, sq, num_splits):
    """The plan reads a step's q in place as grouped rows for groups no 64-row tile divides (3 and 7
    query heads per K/V head: a step's 4 x 3 and 9 x 7 rows fill part of one tile, the box only
    those), for steps of several tiles (20 positions x 4 heads, 5 x 16: 80 rows, with splits), and
    without GQA (no packing, no grouping); FA3's rule and the first call's bits (run_and_check)."""
    x = inputs(torch.bfloat16, sq=sq, s_new=sq, hq=hq, hk=hk)
    lengths = [0, 150, 700 - sq]
    run_and_check(x, torch.tensor(lengths, dtype=torch.int32, device="cuda"), lengths, num_splits=num_splits)


# ---------------------------------------------------------------------------------------- split-KV
@pytest.mark.parametrize("num_splits", [1, 2, 5, 17, 128])
@pytest.mark.parametrize("sq, window", [(1, (-1, -1)), (4, (-1, -1)), (1, (100, -1))])
def test_explicit_num_splits(num_splits, sq, window):
    """Every split count honoured, more splits than key blocks included (empty splits), with sequences
    of sq and sq + 1 keys, a full cache, and a window whose few blocks fall in a few splits; NaN in
    every cache row no sequence uses. (No keys at all: test_split_kernel_sink_softcap_head_dims.)"""
    x = inputs(torch.bfloat16, sq=sq, s_new=sq)
    lengths = [0, 1, 700 - sq]
    run_and_check(x, torch.tensor(lengths, dtype=torch.int32, device="cuda"), lengths, window=window,
                  num_splits=num_splits)


def test_split_counts_agree():
    """The combine's result does not depend on how the keys were split (up to f32 rounding of the
    merge: a few bf16 ulps at most)."""
    x = inputs(torch.bfloat16, sq=1, s_new=0, s_cache=4096, seed=3)
    fill(x, None, [4096] * 3)
    seqlens = torch.tensor([4096, 2000, 130], dtype=torch.int32, device="cuda")
    outs = [fa3lite.flash_attn_with_kvcache(x["q"], x["k_cache"], x["v_cache"], cache_seqlens=seqlens, causal=True,
                                            num_splits=n, return_softmax_lse=True, backend="fa3lite")
            for n in (1, 3, 32)]
    for out, lse in outs[1:]:
        torch.testing.assert_close(out, outs[0][0], atol=2e-2, rtol=0)
        torch.testing.assert_close(lse, outs[0][1], atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("d, dv", [(64, 64), (128, 128), (256, 256), (192, 128)])
@pytest.mark.parametrize("num_splits", [1, 3, 8])
@pytest.mark.parametrize("softcap, sink", [(0.0, True), (5.0, False), (5.0, True)])
def test_split_kernel_sink_softcap_head_dims(d, dv, num_splits, softcap, sink):
    """The split kernel and the combine through hopper.forward_varlen for what flash_attn_with_kvcache
    does not pass (learnable sinks: the combine adds exp(sink) once, after the merge) and every V head
    dim the combine serves; fp16; sequences with 1, 0 and 3 query rows, causal bottom-right."""
    gen = torch.Generator(device="cuda").manual_seed(7)
    q_rows, k_rows, hq, hk = [1, 0, 3], [900, 5, 0], 4, 2
    cu_q = torch.tensor([0, 1, 1, 4], dtype=torch.int32, device="cuda")
    cu_k = torch.tensor([0, 900, 905, 905], dtype=torch.int32, device="cuda")
    q = torch.randn(sum(q_rows), hq, d, device="cuda", generator=gen)
    k = torch.randn(sum(k_rows), hk, d, device="cuda", generator=gen)
    v = torch.randn(sum(k_rows), hk, dv, device="cuda", generator=gen)
    sinks = torch.randn(hq, device="cuda", generator=gen) if sink else None
    scale = d ** -0.5
    args = (cu_q, cu_k, scale, True, 0, None, softcap, sinks)
    ref = fallback.forward_varlen(q.double(), k.double(), v.double(), *args[:-1],
                                  None if sinks is None else sinks.double())
    pt = fallback.forward_varlen(q.half(), k.half(), v.half(), *args)
    out, lse = hopper.forward_varlen(q.half(), k.half(), v.half(), cu_q, cu_k, max(q_rows), scale, True, 0, None,
                                     softcap, sinks, max_seqlen_k=max(k_rows), num_splits=num_splits)
    check_rule("out", out, ref[0], pt[0])
    check_rule("lse", lse, ref[1].float(), pt[1].float())


def test_malformed_cache_seqlens_stay_in_bounds():
    """Lengths past the cache and negative ones (device values the host never reads): the kernels clamp
    each sequence to the cache's rows, so nothing is read or written out of bounds (the device round
    runs this file under compute-sanitizer memcheck); the well-formed row keeps its exact result."""
    x = inputs(torch.bfloat16, sq=1, s_new=0)
    fill(x, None, [700] * 4)
    lengths = [-5, 10 ** 6, 300]
    seqlens = torch.tensor(lengths, dtype=torch.int32, device="cuda")
    for num_splits in (0, 1, 4):
        first, out = (fa3lite.flash_attn_with_kvcache(x["q"], x["k_cache"], x["v_cache"], cache_seqlens=seqlens,
                                                      causal=True, num_splits=num_splits, backend="fa3lite")
                      for _ in range(2))   # the repeat through the launch plan (rows read in place)
        torch.cuda.synchronize()
        assert torch.equal(out, first)
        assert torch.equal(out[0], torch.zeros_like(out[0]))     # no keys
        good = fa3lite.flash_attn_with_kvcache(x["q"][2:], x["k_cache"], x["v_cache"], cache_seqlens=seqlens[2:],
                                               cache_batch_idx=torch.tensor([2], device="cuda"), causal=True,
                                               num_splits=num_splits, backend="fa3lite")
        assert torch.equal(out[2], good[0])


@pytest.mark.parametrize("page_size", [None, 16, 64, 256])
@pytest.mark.parametrize("sq", [1, 4])
def test_against_the_numba_oracle(page_size, sq):
    """The kernels (split-KV, packed GQA, pages read in place) against the independent Numba oracle
    (fa3lite.numba_kernels.kvcache, fp32) by FA3's rule, after an append that the oracle sees as
    part of the cache; shuffled pages, NaN in every unused row and page."""
    from fa3lite.numba_kernels.kvcache import kvcache_attention

    pages = None if page_size is None else (-(-700 // page_size), page_size)
    x = inputs(torch.bfloat16, sq=sq, s_new=sq, paged=pages)
    capacity = pages[0] * pages[1] if pages else 700
    lengths = [0, 37, capacity - sq]
    fill(x, x["page_table"], lengths)
    seqlens = torch.tensor(lengths, dtype=torch.int32, device="cuda")
    out, lse = fa3lite.flash_attn_with_kvcache(x["q"], x["k_cache"], x["v_cache"], x["k"], x["v"], cache_seqlens=seqlens,
                                               page_table=x["page_table"], softmax_scale=SCALE, causal=True,
                                               return_softmax_lse=True, backend="fa3lite")
    ends = seqlens + sq   # the appended rows are part of the cache now
    ref_out, ref_lse = kvcache_attention(x["q"], x["k_cache"], x["v_cache"], ends, page_table=x["page_table"],
                                         softmax_scale=SCALE, causal=True)
    pt_out, pt_lse, _, _ = reference(x["q"], x["k_cache"], x["v_cache"], None, None, None, None, ends, None, None,
                                     x["page_table"], True, (-1, -1), True, SCALE, dtype=x["q"].dtype)
    check_rule("out", out, ref_out, pt_out)
    check_rule("lse", lse, ref_lse, pt_lse.float())


@pytest.mark.parametrize("layout", ["contiguous", "batch_idx32", "batch_idx64", "paged16", "paged64"])
@pytest.mark.parametrize("s_new", [1, 5])
@pytest.mark.parametrize("lengths", ["tensor", "int"])
def test_append_kernel_writes_the_bits_torch_appends(layout, s_new, lengths):
    """The append kernel (hopper.append_plan) against torch's append (kvcache._append) on NaN-filled
    caches: every element equal, with appends crossing page boundaries, positions past the capacity
    clamped onto the last row, cache rows picked by batch_idx, and V's own head dim."""
    from fa3lite import kvcache

    g = torch.Generator(device="cuda").manual_seed(3)
    b, hk, d, dv = 3, 2, 128, 64
    paged = layout.startswith("paged")
    if paged:
        page_size, pages = int(layout[5:]), 3
        units, rows_per_unit = b * pages + 2, page_size
        table = torch.randperm(units, device="cuda", generator=g)[:b * pages].view(b, pages).to(torch.int32)
        capacity = pages * page_size
    else:
        units, rows_per_unit, table, capacity = 5, 40, None, 40
    batch_idx = None
    if layout.startswith("batch_idx"):
        batch_idx = torch.tensor([4, 0, 2], device="cuda", dtype=torch.int32 if layout.endswith("32") else torch.int64)
    k_cache = torch.full((units, rows_per_unit, hk, d), float("nan"), device="cuda", dtype=torch.bfloat16)
    v_cache = torch.full((units, rows_per_unit, hk, dv), float("nan"), device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, s_new, hk, d, device="cuda", generator=g).bfloat16()
    v = torch.randn(b, s_new, hk, dv, device="cuda", generator=g).bfloat16()
    # one new row: the last batch row's lands past the capacity and is clamped onto the last row;
    # five: it ends exactly there (clamping several rows onto one would leave the winner unordered,
    # in index_copy_ as in the kernel); paged, the middle batch row's rows cross a page boundary
    last = capacity + 3 if s_new == 1 else capacity - s_new
    middle = rows_per_unit - 1 if paged else 17
    seqlens = (torch.tensor([0, middle, last], dtype=torch.int32, device="cuda")
               if lengths == "tensor" else capacity - s_new)
    plan = hopper.append_plan(k_cache, v_cache, k, v, seqlens, batch_idx, table)
    assert plan is not None
    got_k, got_v = k_cache.clone(), v_cache.clone()
    seqused = torch.full((b,), -12345, dtype=torch.int32, device="cuda")
    plan(got_k, got_v, k, v, seqlens, batch_idx, table, seqused)
    # the key lengths after the append, as kvcache's torch path computes them (an int32 add)
    assert torch.equal(seqused, seqlens + s_new if lengths == "tensor"
                       else torch.full((b,), seqlens + s_new, dtype=torch.int32, device="cuda"))
    end = seqlens.long() if lengths == "tensor" else torch.full((b,), seqlens, device="cuda")
    row = torch.arange(b, device="cuda") if batch_idx is None else batch_idx.long()
    for cache, new in ((k_cache, k), (v_cache, v)):
        kvcache._append(cache, new, end, row, table)
    assert torch.equal(got_k.nan_to_num(7.0), k_cache.nan_to_num(7.0))
    assert torch.equal(got_v.nan_to_num(7.0), v_cache.nan_to_num(7.0))
    assert not got_k.isnan().all() and got_k.isnan().any()   # rows written, others left alone


@pytest.mark.parametrize("paged", [False, True])
def test_repeated_calls_append_through_the_kernel_as_the_first_did(paged):
    """flash_attn_with_kvcache's first call of a signature appends with torch's ops, its repeats with
    the append kernel (the plan attached to the signature): same caches and outputs, bit for bit."""
    pages = -(-700 // 64)
    x = inputs(torch.bfloat16, sq=2, s_new=2, paged=(pages, 64) if paged else None)
    lengths = [0, 63, 698 if not paged else pages * 64 - 2]
    fill(x, x["page_table"], lengths)
    seqlens = torch.tensor(lengths, dtype=torch.int32, device="cuda")
    k0, v0 = x["k_cache"].clone(), x["v_cache"].clone()
    results = []
    for _ in range(3):
        kc, vc = k0.clone(), v0.clone()
        out = fa3lite.flash_attn_with_kvcache(x["q"], kc, vc, x["k"], x["v"], cache_seqlens=seqlens,
                                             page_table=x["page_table"], causal=True, backend="fa3lite")
        results.append((out, kc, vc))
    for out, kc, vc in results[1:]:
        assert torch.equal(out, results[0][0])
        assert torch.equal(kc.nan_to_num(7.0), results[0][1].nan_to_num(7.0))
        assert torch.equal(vc.nan_to_num(7.0), results[0][2].nan_to_num(7.0))


def test_the_append_kernel_loads_outside_a_graph_capture():
    """A signature's first planned call made inside a CUDA graph capture appends with torch's ops (no
    module load while capturing, no failure remembered); the next eager call loads and takes the
    kernel. Replays append and attend as eager calls do."""
    from fa3lite import callkey

    x = inputs(torch.bfloat16, sq=1, s_new=1, seed=4)
    fill(x, None, [700] * 3)
    seqlens = torch.tensor([10, 20, 30], dtype=torch.int32, device="cuda")
    args = (x["q"], x["k_cache"], x["v_cache"], x["k"], x["v"])

    def step():
        return fa3lite.flash_attn_with_kvcache(*args, cache_seqlens=seqlens, causal=True, backend="fa3lite")

    callkey.forget()
    step()   # checked; the plan attached
    plan = callkey.plan(callkey.kvcache_key(*args, None, None, seqlens, None, None, None, None, True, (-1, -1), 0.0,
                                            True, 0, None, False, "fa3lite"))
    assert plan is not None and plan.appends is None
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = step()
    assert plan.appends is None              # torch's ops inside the capture
    eager = step()
    assert plan.appends                      # the kernel, from the first eager repeat on
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, eager)


@pytest.mark.parametrize("paged", [False, True])
def test_append_kernel_clamps_malformed_device_values(paged):
    """Lengths, cache rows and page ids out of range (device values the host never reads): the append
    kernel clamps each to the cache (positions to the last row, rows and pages to the first or last),
    so nothing is written out of bounds (the device round runs this under compute-sanitizer memcheck)."""
    g = torch.Generator(device="cuda").manual_seed(9)
    b, hk, d, units, rows = 3, 2, 64, 4, 16
    k_cache = torch.zeros(units, rows, hk, d, device="cuda", dtype=torch.bfloat16)
    v_cache = torch.zeros_like(k_cache)
    k, v = (torch.randn(b, 1, hk, d, device="cuda", generator=g).bfloat16() for _ in range(2))
    seqlens = torch.tensor([-7, 2 ** 31 - 1, 5], dtype=torch.int32, device="cuda")
    table = torch.tensor([[-1], [10 ** 6], [2]], dtype=torch.int32, device="cuda") if paged else None
    batch_idx = None if paged else torch.tensor([-3, 99, 1], dtype=torch.int32, device="cuda")
    plan = hopper.append_plan(k_cache, v_cache, k, v, seqlens, batch_idx, table)
    seqused = torch.zeros(b, dtype=torch.int32, device="cuda")
    plan(k_cache, v_cache, k, v, seqlens, batch_idx, table, seqused)
    torch.cuda.synchronize()
    assert torch.equal(seqused, seqlens + 1)   # torch's int32 add, wrapping at 2 ** 31 as it does
    # (unit, row) each batch row's new row lands in: lengths clamped to [0, capacity - 1], then the
    # unit (cache row or page) clamped to [0, units - 1]
    want = [(0, 0), (units - 1, rows - 1), (2 if paged else 1, 5)]
    for i, (unit, row) in enumerate(want):
        assert torch.equal(k_cache[unit, row], k[i, 0]) and torch.equal(v_cache[unit, row], v[i, 0])
    assert int((k_cache != 0).any(dim=(2, 3)).sum()) == b   # nothing else written
