"""flash_attn_with_kvcache on the CPU (the torch fallback behind the varlen path): the cache after the
append and the attention output against a reference written independently (per batch row, Python
loops, rotary through complex numbers), over contiguous and paged caches (pages shuffled, page sizes
1 and 4), cache_batch_idx, cache_leftpad, cache_seqlens of 0 and of a full cache, int and tensor
cache_seqlens, rotary interleaved or not, causal, windows, GQA, one query row; NaN in every cache
row and page no sequence uses; and the validation messages."""
import math

import pytest
import torch

import fa3lite

F64 = torch.float64


def rotate_ref(x, cos, sin, pos, interleaved):
    """x (S, H, D) rotated at positions pos (S,), as rotations of complex numbers."""
    rd = 2 * cos.shape[1]
    x = x.clone()
    for s in range(x.shape[0]):
        turn = torch.complex(cos[pos[s]].to(F64), sin[pos[s]].to(F64))           # (rd / 2,)
        if interleaved:
            z = torch.complex(x[s, :, 0:rd:2].to(F64), x[s, :, 1:rd:2].to(F64)) * turn
            x[s, :, 0:rd:2], x[s, :, 1:rd:2] = z.real.to(x.dtype), z.imag.to(x.dtype)
        else:
            z = torch.complex(x[s, :, :rd // 2].to(F64), x[s, :, rd // 2:rd].to(F64)) * turn
            x[s, :, :rd // 2], x[s, :, rd // 2:rd] = z.real.to(x.dtype), z.imag.to(x.dtype)
    return x


def visible(sq, sk, causal, window):
    """(Sq, Sk) bool: flash_attn's bottom-right aligned causal mask and window."""
    left, right = window
    if causal:
        right = 0
    i = torch.arange(sq)[:, None] + sk - sq   # query i's diagonal key
    j = torch.arange(sk)[None, :]
    ok = torch.ones(sq, sk, dtype=torch.bool)
    if right >= 0:
        ok &= j <= i + right
    if left >= 0:
        ok &= j >= i - left
    return ok


def attend(q, k, v, scale, causal, window, dtype=F64):
    """q (Sq, Hq, D), k/v (Sk, Hk, D) -> out (Sq, Hq, Dv), lse (Hq, Sq): the matmuls in ``dtype`` (float64:
    the reference; the input dtype: FA3's "pt"), the softmax in float64."""
    g = q.shape[1] // k.shape[1]
    s = torch.einsum("qhd,khd->hqk", q.to(dtype), k.to(dtype).repeat_interleave(g, 1)).to(F64) * scale
    s = s.masked_fill(~visible(q.shape[0], k.shape[0], causal, window).to(q.device), -math.inf)
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    return torch.einsum("hqk,khd->qhd", p.to(dtype), v.to(dtype).repeat_interleave(g, 1)), lse


def reference(q, k_cache, v_cache, k, v, cos, sin, seqlens, batch_idx, leftpad, page_table, causal, window,
              interleaved, scale, dtype=F64):
    """(out, lse, k_cache after, v_cache after), one batch row at a time; the attention's matmuls in
    ``dtype`` (see attend)."""
    kc, vc = k_cache.clone(), v_cache.clone()
    b, sq = q.shape[:2]
    s_new = 0 if k is None else k.shape[1]
    ends = [int(x) for x in (seqlens.tolist() if isinstance(seqlens, torch.Tensor) else [seqlens] * b)]
    outs, lses = [], []
    for i in range(b):
        end, lp = ends[i], (int(leftpad[i]) if leftpad is not None else 0)
        row = int(batch_idx[i]) if batch_idx is not None else i
        qi = q[i]
        if cos is not None:
            logical = end - lp
            k_i = rotate_ref(k[i], cos, sin, [logical + t for t in range(s_new)], interleaved)
            same = not (causal or tuple(window) != (-1, -1))
            qi = rotate_ref(qi, cos, sin, [logical + (0 if same else t) for t in range(sq)], interleaved)
        else:
            k_i = None if k is None else k[i]
        if page_table is None:
            if k is not None:
                kc[row, end:end + s_new], vc[row, end:end + s_new] = k_i, v[i]
            keys, vals = kc[row, lp:end + s_new], vc[row, lp:end + s_new]
        else:
            ps = kc.shape[1]
            for t in range(s_new):
                page, off = int(page_table[i, (end + t) // ps]), (end + t) % ps
                kc[page, off], vc[page, off] = k_i[t], v[i, t]
            keys = torch.cat([kc[int(p)] for p in page_table[i]])[:end + s_new]
            vals = torch.cat([vc[int(p)] for p in page_table[i]])[:end + s_new]
        o, l = attend(qi, keys, vals, scale, causal, window, dtype)
        outs.append(o)
        lses.append(l)
    return torch.stack(outs), torch.stack(lses), kc, vc


def make(b=3, sq=2, hq=4, hk=2, d=16, s_cache=12, s_new=2, paged=None, rd=8, seed=0, dtype=F64, ro_len=64):
    """Inputs with NaN in every cache row (or page) no sequence will use; a rotary table of ro_len
    positions (more than any position used)."""
    g = torch.Generator().manual_seed(seed)
    rnd = lambda *shape: torch.randn(*shape, generator=g, dtype=dtype)  # noqa: E731
    if paged:
        pages, ps = paged
        num_pages = b * pages + 2
        k_cache, v_cache = (torch.full((num_pages, ps, hk, d), math.nan, dtype=dtype) for _ in range(2))
        page_table = torch.randperm(num_pages, generator=g)[:b * pages].view(b, pages).to(torch.int32)
    else:
        k_cache, v_cache = (torch.full((b + 1, s_cache, hk, d), math.nan, dtype=dtype) for _ in range(2))
        page_table = None
    angles = torch.rand(ro_len, rd // 2, generator=g, dtype=F64) * 6
    return dict(q=rnd(b, sq, hq, d), k_cache=k_cache, v_cache=v_cache, k=rnd(b, s_new, hk, d) if s_new else None,
                v=rnd(b, s_new, hk, d) if s_new else None, cos=angles.cos().to(dtype), sin=angles.sin().to(dtype),
                page_table=page_table, gen=g)


def fill(x, page_table, lengths, batch_idx=None, leftpad=None):
    """Random values in each sequence's used cache rows [leftpad, length) (the rest stays NaN)."""
    g = x["gen"]
    for cache in (x["k_cache"], x["v_cache"]):
        for i, n in enumerate(lengths):
            lp = int(leftpad[i]) if leftpad is not None else 0
            if page_table is None:
                row = int(batch_idx[i]) if batch_idx is not None else i
                cache[row, lp:n] = torch.randn(n - lp, *cache.shape[2:], generator=g, dtype=cache.dtype)
            else:
                ps = cache.shape[1]
                for pos in range(n):
                    cache[int(page_table[i, pos // ps]), pos % ps] = torch.randn(*cache.shape[2:], generator=g,
                                                                                dtype=cache.dtype)


CASES = [
    dict(),
    dict(causal=True),
    dict(causal=True, rotary=True),
    dict(rotary=True, interleaved=False),
    dict(causal=True, rotary=True, interleaved=False, window=(3, -1)),
    dict(window=(2, 1)),
    dict(causal=True, batch_idx=True),
    dict(causal=True, leftpad=True, rotary=True),
    dict(causal=True, paged=(3, 4), rotary=True),
    dict(paged=(12, 1)),
    dict(causal=True, paged=(3, 4), s_new=0),
    dict(causal=True, sq=1, s_new=1),
]


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("seqlens_kind", ["tensor", "int"])
def test_matches_reference(case, seqlens_kind):
    b, s_new, sq = 3, case.get("s_new", 2), case.get("sq", 2)
    x = make(b=b, sq=sq, s_new=s_new, paged=case.get("paged"))
    capacity = 12
    if seqlens_kind == "int":
        seqlens = 5
        lengths = [5] * b
    else:   # an empty cache, a middle one, a cache that the append fills to the last row
        lengths = [0, 5, capacity - s_new]
        seqlens = torch.tensor(lengths, dtype=torch.int32)
    batch_idx = torch.tensor([2, 0, 3], dtype=torch.int32) if case.get("batch_idx") else None
    leftpad = torch.tensor([0, 2, 1], dtype=torch.int32) if case.get("leftpad") else None
    if leftpad is not None and seqlens_kind == "tensor":
        leftpad = torch.minimum(leftpad, seqlens)
    fill(x, x["page_table"], lengths, batch_idx, leftpad)
    causal, window = case.get("causal", False), case.get("window", (-1, -1))
    interleaved = case.get("interleaved", True)
    rot = dict(rotary_cos=x["cos"], rotary_sin=x["sin"]) if case.get("rotary") else {}
    want_out, want_lse, want_k, want_v = reference(
        x["q"], x["k_cache"], x["v_cache"], x["k"], x["v"], x["cos"] if rot else None, x["sin"], seqlens,
        batch_idx, leftpad, x["page_table"], causal, window, interleaved, 0.25)
    out, lse = fa3lite.flash_attn_with_kvcache(
        x["q"], x["k_cache"], x["v_cache"], x["k"], x["v"], cache_seqlens=seqlens, cache_batch_idx=batch_idx,
        cache_leftpad=leftpad, page_table=x["page_table"], softmax_scale=0.25, causal=causal, window_size=window,
        rotary_interleaved=interleaved, return_softmax_lse=True, backend="torch", **rot)
    torch.testing.assert_close(x["k_cache"], want_k, equal_nan=True)
    torch.testing.assert_close(x["v_cache"], want_v, equal_nan=True)
    assert not out.isnan().any()
    torch.testing.assert_close(out, want_out)
    torch.testing.assert_close(lse, want_lse.float() if lse.dtype == torch.float32 else want_lse)


@pytest.mark.parametrize("case", [dict(sq=1, causal=True), dict(sq=3), dict(sq=1, paged=(3, 4), softcap=2.0),
                                  dict(sq=2, causal=True), dict(sq=1, causal=True, window_size=(4, -1)),
                                  dict(sq=4, causal=True, window_size=(2, -1)), dict(sq=3, window_size=(3, 1))],
                         ids=str)
def test_pack_gqa_gives_the_unpacked_result(case):
    """The packed path (a position's query heads of one K/V head on adjacent rows of one head, each
    keeping its position's mask) against the plain one: pack_gqa None / True / False agree, out and
    lse, causal and windowed with several query rows included, NaN in unused cache rows."""
    case = dict(case)
    x = make(sq=case.pop("sq"), s_new=1, paged=case.pop("paged", None))
    lengths = [0, 5, 11]
    fill(x, x["page_table"], lengths)
    seqlens = torch.tensor(lengths, dtype=torch.int32)
    results = []
    for pack in (False, None, True):
        kc, vc = x["k_cache"].clone(), x["v_cache"].clone()
        results.append(fa3lite.flash_attn_with_kvcache(
            x["q"], kc, vc, x["k"], x["v"], cache_seqlens=seqlens, page_table=x["page_table"], pack_gqa=pack,
            return_softmax_lse=True, backend="torch", **case))
    for out, lse in results[1:]:
        assert out.shape == results[0][0].shape and lse.shape == results[0][1].shape
        torch.testing.assert_close(out, results[0][0])
        torch.testing.assert_close(lse, results[0][1])


def test_out_of_range_tensor_positions_stay_in_bounds():
    """A tensor cache_seqlens is not read on the host: appends past the capacity land on the last row
    of the sequence's own cache row, never on another's."""
    x = make(b=2, s_new=3)
    fill(x, None, [12, 4])
    before = x["k_cache"].clone()
    fa3lite.flash_attn_with_kvcache(x["q"], x["k_cache"], x["v_cache"], x["k"], x["v"],
                                    cache_seqlens=torch.tensor([11, 4], dtype=torch.int32), backend="torch")
    torch.testing.assert_close(x["k_cache"][2], before[2], equal_nan=True)        # the unused cache row
    torch.testing.assert_close(x["k_cache"][0, :11], before[0, :11])
    torch.testing.assert_close(x["k_cache"][0, 11], x["k"][0, 2])                 # the last append wins


def test_no_autograd():
    x = make(s_new=0)
    fill(x, None, [12, 12, 12])
    q = x["q"].requires_grad_()
    out = fa3lite.flash_attn_with_kvcache(q, x["k_cache"], x["v_cache"], backend="torch")
    assert not out.requires_grad


@pytest.mark.parametrize("kwargs, names", [
    (dict(k="k"), ["k, v"]),
    (dict(cache_seqlens=None, k="k", v="v"), ["cache_seqlens"]),
    (dict(cache_seqlens=11, k="k", v="v"), ["cache_seqlens"]),
    (dict(cache_seqlens=torch.zeros(3, dtype=torch.int64)), ["cache_seqlens"]),
    (dict(cache_batch_idx=torch.zeros(2, dtype=torch.int32)), ["cache_batch_idx"]),
    (dict(rotary_cos="cos"), ["rotary_cos, rotary_sin"]),
    (dict(rotary_cos="cos", rotary_sin="sin"), ["rotary_cos"]),
    (dict(page_table=torch.zeros(3, 2, dtype=torch.int32), cache_leftpad=torch.zeros(3, dtype=torch.int32)),
     ["cache_leftpad"]),
    (dict(page_table=torch.zeros(3, 2, dtype=torch.int64)), ["page_table"]),
    (dict(num_splits=-1, pack_gqa="yes"), ["num_splits", "pack_gqa"]),
    (dict(window_size=(1,), softcap=-1.0), ["window_size", "softcap"]),
])
def test_validation_names_arguments(kwargs, names):
    x = make(s_new=2)
    sub = {"k": x["k"], "v": x["v"], "cos": x["cos"], "sin": x["sin"]}
    kwargs = {name: sub.get(val, val) if isinstance(val, str) and name not in ("pack_gqa",) else val
              for name, val in kwargs.items()}
    with pytest.raises(fa3lite.InputError) as err:
        fa3lite.flash_attn_with_kvcache(x["q"], x["k_cache"], x["v_cache"], **kwargs)
    for name in names:
        assert name in str(err.value)


def test_cache_must_be_rows_in_place():
    x = make(s_new=0)
    k_cache = x["k_cache"].transpose(0, 1)
    with pytest.raises(fa3lite.InputError, match=r"k_cache.stride\(0\)"):
        fa3lite.flash_attn_with_kvcache(x["q"], k_cache, x["v_cache"].transpose(0, 1))


def test_split_rule():
    """hopper/splits.py: no split once the tiles fill the machine, else about one wave of CTAs (half of
    one for short keys), never more than the keys give each split MIN_BLOCKS blocks, nor MAX_SPLITS;
    explicit counts from the kvcache path reach the split kernel only for decode-sized tiles (or when
    asked for)."""
    from fa3lite.hopper import splits
    from fa3lite.kvcache import DECODE_ROWS, _kernel_splits
    from fa3lite.variants import SPLIT_BLOCK_M

    assert DECODE_ROWS == SPLIT_BLOCK_M

    sms = 132
    assert splits.num_splits(8, 1024, sms) == 16              # B=1, 8 K/V heads, long cache: 128 CTAs
    assert splits.num_splits(64, 1024, sms) == 2
    assert splits.num_splits(int(splits.FILL * sms), 1024, sms) == 1
    assert splits.num_splits(1, 10_000, sms) == splits.MAX_SPLITS
    assert splits.num_splits(8, 6, sms) == 6 // splits.MIN_BLOCKS   # short keys: few splits
    assert splits.num_splits(8, 8, sms) == 8                  # B=1, 1k keys: one block per split (RESULTS 37)
    assert splits.num_splits(64, 8, sms) == 1                 # B=8, 1k keys: 64 CTAs read it as fast as 128
    assert splits.num_splits(32, 16, sms) == 2                # B=4, 2k keys: half the SMs
    assert splits.num_splits(32, 17, sms) == 4                # longer keys: the whole machine
    assert splits.num_splits(8, 1, sms) == 1
    for tiles in range(1, 2 * sms):
        s = splits.num_splits(tiles, 4096, sms)
        assert 1 <= s <= splits.MAX_SPLITS and (s == 1 or tiles * s <= sms)
    assert _kernel_splits(0, 1) == 0 and _kernel_splits(0, DECODE_ROWS) == 0 and _kernel_splits(3, 4) == 3
    assert _kernel_splits(0, DECODE_ROWS + 1) == -1 and _kernel_splits(1, 500) == -1
    assert _kernel_splits(4, 500) == 4
