"""The KV-cache oracle (fa3lite.numba_kernels.kvcache) against the float64 torch reference of
tests/test_kvcache.py: contiguous caches with cache_batch_idx and cache_leftpad, paged caches with
shuffled pages, causal and windowed masks, softcap, GQA, several query rows, sequences of 0 and full
lengths, NaN in every cache row and page no sequence uses (the oracle must never read them).

Simulator isolation as in tests/test_aux.py: the ``sim`` cases run in a subprocess with
NUMBA_ENABLE_CUDASIM=1 (test_simulator_suite); the GPU case runs on any CUDA GPU.
"""
from __future__ import annotations

import pytest
import torch
from conftest import SIMULATOR, run_simulator_suite, sim
from test_kvcache import fill, make, reference

HAS_CUDA = (not SIMULATOR) and torch.cuda.is_available()
SIM_SUITE_TIMEOUT_S = 600
SCALE = 0.25

CASES = [
    dict(),
    dict(causal=True),
    dict(causal=True, window=(3, -1)),
    dict(window=(4, 1), softcap=1.5),
    dict(causal=True, batch_idx=[2, 0, 3], leftpad=[1, 0, 4]),
    dict(causal=True, paged=(4, 4)),
    dict(paged=(3, 8), window=(5, 0), softcap=2.0),
]


@pytest.mark.skipif(SIMULATOR, reason="this process is the simulator run")
def test_simulator_suite():
    """Run this file's simulator cases in a subprocess with NUMBA_ENABLE_CUDASIM=1."""
    run_simulator_suite(__file__, SIM_SUITE_TIMEOUT_S)


def check(case, sq, dtype, device):
    from fa3lite.numba_kernels.kvcache import kvcache_attention

    case = dict(case)
    paged = case.pop("paged", None)
    x = make(b=3, sq=sq, hq=4, hk=2, d=16, s_cache=16, s_new=0, paged=paged, seed=sq)
    capacity = paged[0] * paged[1] if paged else 16
    batch_idx = case.pop("batch_idx", None)
    leftpad = case.pop("leftpad", None)
    batch_idx = torch.tensor(batch_idx, dtype=torch.int32) if batch_idx else None
    leftpad = torch.tensor(leftpad, dtype=torch.int32) if leftpad else None
    lengths = [0 if leftpad is None else int(leftpad[0]), capacity, capacity // 2 + 1]
    fill(x, x["page_table"], lengths, batch_idx, leftpad)
    seqlens = torch.tensor(lengths, dtype=torch.int32)
    causal, window, softcap = case.pop("causal", False), case.pop("window", (-1, -1)), case.pop("softcap", 0.0)
    assert not case
    want_out, want_lse = _reference(x, seqlens, batch_idx, leftpad, causal, window, softcap)
    to = lambda t: None if t is None else t.to(device)  # noqa: E731
    out, lse = kvcache_attention(x["q"].to(device, dtype), x["k_cache"].to(device, dtype), x["v_cache"].to(device, dtype),
                                 seqlens.to(device), page_table=to(x["page_table"]), cache_batch_idx=to(batch_idx),
                                 cache_leftpad=to(leftpad), softmax_scale=SCALE, causal=causal, window_size=window,
                                 softcap=softcap)
    tol = dict(atol=1e-5, rtol=1e-5) if dtype == torch.float32 else dict(atol=2e-2, rtol=2e-2)
    assert not out.isnan().any()
    torch.testing.assert_close(out.cpu(), want_out.float(), **tol)
    torch.testing.assert_close(lse.cpu(), want_lse.float(), **tol)


def _reference(x, seqlens, batch_idx, leftpad, causal, window, softcap):
    """float64 out, lse of test_kvcache.reference (no append), softcap applied to the scores by
    reusing its scale: softcap is folded in by hand below where the reference has no softcap."""
    if softcap == 0.0:
        out, lse, _, _ = reference(x["q"], x["k_cache"], x["v_cache"], None, None, None, None, seqlens, batch_idx,
                                   leftpad, x["page_table"], causal, window, True, SCALE)
        return out, lse
    return _softcapped(x, seqlens, batch_idx, leftpad, causal, window, softcap)


def _softcapped(x, seqlens, batch_idx, leftpad, causal, window, softcap):
    """The same math with softcap, one batch row at a time, written out in float64."""
    import math
    q, kc, vc, table = x["q"], x["k_cache"], x["v_cache"], x["page_table"]
    b, sq, hq, d = q.shape
    group = hq // kc.shape[2]
    out = torch.zeros(b, sq, hq, vc.shape[3], dtype=torch.float64)
    lse = torch.full((b, hq, sq), -math.inf, dtype=torch.float64)
    for r in range(b):
        start = int(leftpad[r]) if leftpad is not None else 0
        n = max(int(seqlens[r]) - start, 0)
        pos = torch.arange(start, start + n)
        if table is not None:
            ps = kc.shape[1]
            keys = kc[table[r].long()[pos // ps], pos % ps]
            vals = vc[table[r].long()[pos // ps], pos % ps]
        else:
            row = int(batch_idx[r]) if batch_idx is not None else r
            keys, vals = kc[row, pos], vc[row, pos]
        keys, vals = keys.repeat_interleave(group, dim=1), vals.repeat_interleave(group, dim=1)
        s = torch.einsum("ihd,jhd->hij", q[r], keys) * SCALE
        s = softcap * torch.tanh(s / softcap)
        i = torch.arange(sq)[:, None] + n - sq
        j = torch.arange(n)[None, :]
        visible = torch.ones(sq, n, dtype=torch.bool)
        left, right = window
        if causal:
            right = 0
        if left >= 0:
            visible &= j >= i - left
        if right >= 0:
            visible &= j <= i + right
        s = s.masked_fill(~visible, -math.inf)
        row_lse = torch.logsumexp(s, dim=-1)
        p = torch.exp(s - row_lse[..., None]).nan_to_num(0.0)
        out[r] = torch.einsum("hij,jhd->ihd", p, vals)
        lse[r] = row_lse
    return out, lse


@sim
@pytest.mark.parametrize("sq", [1, 3])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_oracle_matches_reference_sim(case, sq):
    check(case, sq, torch.float32, "cpu")


@sim
def test_oracle_fp16_inputs_sim():
    check(dict(causal=True, paged=(4, 4)), 2, torch.float16, "cpu")


@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
@pytest.mark.parametrize("case", CASES, ids=str)
def test_oracle_matches_reference_gpu(case):
    check(case, 2, torch.float32, "cuda")
