"""Stress run on the GPU (not part of the default run): 10,000 calls drawn by hypothesis -- shapes,
dtypes, layouts, masks, GQA ratios, entry points, which inputs require grad, deterministic or not --
forward and backward, every result checked against the float64 reference with FA3's rule, and neither
GPU memory nor fa3lite's host-side caches grow.

    FA3LITE_STRESS=1 python -m pytest -q tests/test_stress_gpu.py      # FA3LITE_STRESS_CALLS=10000
"""
from __future__ import annotations

import gc
import os
import time

import pytest
import torch

pytestmark = [pytest.mark.gpu, pytest.mark.stress]
if not (torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)):
    pytest.skip("needs a Hopper (sm_90) GPU", allow_module_level=True)
if os.environ.get("FA3LITE_STRESS") != "1":
    pytest.skip("the stress run is opt-in: FA3LITE_STRESS=1", allow_module_level=True)

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

import fa3lite  # noqa: E402
from fa3lite.hopper import bwd as hopper_bwd  # noqa: E402
from fa3lite.runtime import launch, tma  # noqa: E402
from fa3lite.hopper.combine import all_combine_variants  # noqa: E402
from fa3lite.variants import all_fwd_variants  # noqa: E402
from conftest import assert_close_fa3, dsoftmax_atols, fa3_atol, ref_attention  # noqa: E402

CALLS = int(os.environ.get("FA3LITE_STRESS_CALLS", "10000"))
WARMUP = min(200, CALLS // 2)   # calls before the memory baseline (kernels loaded, allocator warm)
SLACK_BYTES = 1 << 20           # allowed growth of the memory held between calls
_state = {"calls": 0, "baseline": None, "peak_growth": 0, "start": None}


def _make(layout, shape, dtype, gen):
    """A (B, S, H, D) tensor: contiguous, a slice of a packed qkv buffer, a BHSD transpose, or a view
    with padded head and sequence strides."""
    b, s, h, d = shape
    if layout == "contiguous":
        return torch.randn(shape, device="cuda", generator=gen).to(dtype)
    if layout == "packed":
        return torch.randn(b, s, 3, h, d, device="cuda", generator=gen).to(dtype)[:, :, 1]
    if layout == "transposed":
        return torch.randn(b, h, s, d, device="cuda", generator=gen).to(dtype).transpose(1, 2)
    return torch.randn(b, s + 3, h + 1, d + 64, device="cuda", generator=gen).to(dtype)[:, 2:s + 2, 1:, :d]


@settings(max_examples=CALLS, deadline=None, database=None, derandomize=False,
          suppress_health_check=list(HealthCheck))
@given(
    b=st.integers(1, 3),
    sq=st.one_of(st.integers(1, 8), st.integers(1, 400)),
    sk=st.one_of(st.integers(0, 8), st.integers(1, 400)),
    hk=st.integers(1, 3),
    group=st.sampled_from([1, 2, 4]),
    d=st.sampled_from([64, 128, 256]),
    dtype=st.sampled_from([torch.bfloat16, torch.float16]),
    causal=st.booleans(),
    layouts=st.tuples(*[st.sampled_from(["contiguous", "packed", "transposed", "padded"])] * 4),
    needs=st.sampled_from([(True, True, True), (True, False, False), (False, True, True), (False, False, True),
                           (False, False, False)]),
    entry=st.sampled_from(["flash", "sdpa"]),
    deterministic=st.booleans(),
    scale=st.one_of(st.none(), st.floats(0.01, 0.5)),
    seed=st.integers(0, 2**31 - 1),
)
def test_stress(b, sq, sk, hk, group, d, dtype, causal, layouts, needs, entry, deterministic, scale, seed):
    _account()   # before this call allocates: whatever the GPU still holds was left by earlier calls
    hq = hk * group
    gen = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v, dout = (_make(lay, shape, dtype, gen) for lay, shape in
                     zip(layouts, ((b, sq, hq, d), (b, sk, hk, d), (b, sk, hk, d), (b, sq, hq, d))))
    leaves = [t.detach().requires_grad_(n) for t, n in zip((q, k, v), needs)]
    if entry == "flash":
        out = fa3lite.flash_attn_func(*leaves, softmax_scale=scale, causal=causal, deterministic=deterministic,
                                      backend="fa3lite")
        offset = sk - sq
    else:   # torch's layout and top-left causal alignment
        out = fa3lite.scaled_dot_product_attention(*(t.transpose(1, 2) for t in leaves), is_causal=causal,
                                                   scale=scale, enable_gqa=True, backend="fa3lite").transpose(1, 2)
        offset = 0
    wanted = [t for t in leaves if t.requires_grad]
    grads = torch.autograd.grad(out, wanted, dout) if wanted else ()
    for kind, cdt in (("ref", torch.float64), ("pt", dtype)):
        ref_leaves = [t.detach().to(cdt).requires_grad_(n) for t, n in zip((q, k, v), needs)]
        o, _ = ref_attention(*ref_leaves, scale, causal, offset, dtype=cdt)
        ref_wanted = [t for t in ref_leaves if t.requires_grad]
        ref_grads = torch.autograd.grad(o, ref_wanted, dout.to(cdt)) if ref_wanted else ()
        if kind == "ref":
            ref_out, ref_g = o, ref_grads
        else:
            pt_out, pt_g = o, ref_grads
    assert_close_fa3(out, ref_out, pt_out, fa3_atol(ref_out), "out")
    dq_atol, dk_atol = dsoftmax_atols(q, k, v, dout, scale, causal, offset)
    extra = {"dq": dq_atol, "dk": dk_atol, "dv": 0.0}
    names = [name for name, n in zip(("dq", "dk", "dv"), needs) if n]
    for name, g, r, p in zip(names, grads, ref_g, pt_g):
        assert_close_fa3(g, r, p, fa3_atol(r) + extra[name], name)


def _account():
    """GPU memory held between calls (every 100th): once the run is warm it must not grow."""
    _state["calls"] += 1
    if _state["start"] is None:
        _state["start"] = time.perf_counter()
    if _state["calls"] % 100 and _state["calls"] != WARMUP:
        return
    if _state["calls"] % 1000 == 0:   # progress, so a run cut short by a time limit still says how far it got
        print(f"stress: {_state['calls']} calls in {time.perf_counter() - _state['start']:.0f} s", flush=True)
    gc.collect()
    torch.cuda.synchronize()
    held = torch.cuda.memory_allocated()
    if _state["calls"] == WARMUP:
        _state["baseline"] = held
    elif _state["baseline"] is not None:
        _state["peak_growth"] = max(_state["peak_growth"], held - _state["baseline"])


def test_after_the_stress_run_nothing_grew():
    assert _state["calls"] >= CALLS * 0.9, f"only {_state['calls']} calls ran"
    assert _state["baseline"] is not None
    assert _state["peak_growth"] <= SLACK_BYTES, f"GPU memory held grew by {_state['peak_growth']} bytes"
    assert len(tma._cache) <= tma._CACHE_LIMIT
    buildable = {v.spec() for v in all_fwd_variants()} | {v.spec() for v in all_combine_variants()}
    for v in hopper_bwd.all_bwd_variants():
        buildable |= {v.spec(), v.preprocess_spec(), v.postprocess_spec()}
    loaded = {spec for spec, _, _ in launch._loaded}
    assert loaded <= buildable, loaded - buildable        # one module per kernel variant, never per call
    print(f"stress: {_state['calls']} calls, GPU memory growth {_state['peak_growth']} bytes, "
          f"{len(tma._cache)} cached tensor maps, {len(launch._loaded)} loaded kernels")
