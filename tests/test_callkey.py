"""The fast path of repeated calls (fa3lite.callkey): a call signature that passed every check skips
them next time, and anything the checks read that changes makes a different key (CPU)."""
from __future__ import annotations

import pytest
import torch

import fa3lite
from fa3lite import callkey, checks, fallback, ops


def _qkv(shape=(2, 9, 4, 64), dtype=torch.bfloat16):
    return [torch.randn(shape, dtype=dtype) for _ in range(3)]


def _key(q, k, v, scale=None, causal=False, deterministic=False, return_lse=False, backend="auto"):
    return callkey.flash_key(q, k, v, scale, causal, deterministic, return_lse, backend)


def test_same_metadata_other_data_gives_the_same_key():
    assert _key(*_qkv()) == _key(*_qkv())


@pytest.mark.parametrize("change", ["shape", "stride", "dtype", "device", "alignment", "scale", "causal",
                                    "deterministic", "return_lse", "backend"])
def test_every_property_the_checks_read_changes_the_key(change):
    q, k, v = _qkv()
    base = _key(q, k, v)
    if change == "shape":
        other = _key(torch.randn(2, 10, 4, 64, dtype=torch.bfloat16), k, v)
    elif change == "stride":
        other = _key(torch.randn(2, 4, 9, 64, dtype=torch.bfloat16).transpose(1, 2), k, v)
    elif change == "dtype":
        other = _key(q, k.half(), v)
    elif change == "device":
        other = _key(q, k.to("meta"), v)
    elif change == "alignment":
        flat = torch.randn(q.numel() + 1, dtype=torch.bfloat16)
        misaligned = flat[1:].view(q.shape)                # 2 bytes past a 16-byte boundary
        assert misaligned.data_ptr() % 16 and misaligned.stride() == q.stride()
        other = _key(misaligned, k, v)
    elif change == "scale":
        other = _key(q, k, v, scale=0.1)
    elif change == "backend":
        other = _key(q, k, v, backend="fa3lite")
    else:
        other = _key(q, k, v, **{change: True})
    assert other is not None and other != base


@pytest.mark.parametrize("loose", ["int_flag", "int_scale", "numpy_like_scale", "subclass", "not_a_tensor"])
def test_loose_types_get_no_key(loose):
    """True == 1 and 1.0 == 1 hash alike: such calls must take the full checks every time."""
    q, k, v = _qkv()

    class Scale(float):
        pass

    if loose == "int_flag":
        assert _key(q, k, v, causal=1) is None
    elif loose == "int_scale":
        assert _key(q, k, v, scale=1) is None
    elif loose == "numpy_like_scale":
        assert _key(q, k, v, scale=Scale(0.1)) is None
    elif loose == "subclass":
        assert _key(torch.nn.Parameter(q), k, v) is None
    else:
        assert _key(q.tolist(), k, v) is None


def test_sdpa_keys_only_without_mask_or_dropout():
    q, k, v = (t.transpose(1, 2) for t in _qkv())
    key = callkey.sdpa_key(q, k, v, None, 0.0, False, None, False, "auto")
    assert key is not None
    assert callkey.sdpa_key(q, k, v, torch.ones(9, 9, dtype=torch.bool), 0.0, False, None, False, "auto") is None
    assert callkey.sdpa_key(q, k, v, None, 0.1, False, None, False, "auto") is None
    assert callkey.sdpa_key(q, k, v, None, 0, False, None, False, "auto") is None
    assert callkey.sdpa_key(q, k, v, None, 0.0, True, None, False, "auto") != key


@pytest.fixture
def kernels_on_cpu(monkeypatch):
    """Kernel checks pass for CPU tensors and the "kernels" are the fallback; counts kernel_reasons."""
    from fa3lite import hopper

    seen = []

    def reasons(q, k, v, softmax_scale=None, softcap=0.0):
        seen.append(q.stride())
        return []

    monkeypatch.setattr(checks, "kernel_reasons", reasons)
    monkeypatch.setattr(hopper, "forward", fallback.forward)

    def forward_bhsd(query, key, value, scale, causal):
        out, lse = fallback.forward(*(t.transpose(1, 2) for t in (query, key, value)), scale, causal, 0)
        return out.transpose(1, 2), lse

    monkeypatch.setattr(hopper, "forward_bhsd", forward_bhsd)
    monkeypatch.setattr(hopper, "backward", lambda *a, need_dq, need_dkv, fwd_plan=None, **mods: fallback.backward(
        *a[:9], need_dq=need_dq, need_dkv=need_dkv, **mods))     # a[9] is deterministic
    return seen


def test_a_repeated_call_skips_the_checks_and_a_changed_one_does_not(kernels_on_cpu):
    q, k, v = _qkv()
    want = fallback.forward(q, k, v, 64 ** -0.5, True, 0)[0]
    for _ in range(3):
        assert torch.equal(fa3lite.flash_attn_func(q, k, v, causal=True), want)
    assert len(kernels_on_cpu) == 1                       # checked once, remembered
    qt = q.transpose(1, 2).contiguous().transpose(1, 2)   # same values, other strides
    assert torch.equal(fa3lite.flash_attn_func(qt, k, v, causal=True), want)
    assert len(kernels_on_cpu) == 2


def test_a_remembered_signature_never_hides_an_invalid_call(kernels_on_cpu):
    q, k, v = _qkv()
    fa3lite.flash_attn_func(q, k, v)
    with pytest.raises(fa3lite.InputError, match="causal: expected a bool"):
        fa3lite.flash_attn_func(q, k, v, causal=1)
    with pytest.raises(fa3lite.InputError, match="k.dtype"):
        fa3lite.flash_attn_func(q, k.half(), v)
    with pytest.raises(fa3lite.InputError, match="softmax_scale"):
        fa3lite.flash_attn_func(q, k, v, softmax_scale=float("nan"))


def test_fast_path_with_grads_and_without(kernels_on_cpu):
    q, k, v = (t.requires_grad_() for t in _qkv((1, 7, 2, 64), torch.float32))
    for _ in range(2):
        out = fa3lite.flash_attn_func(q, k, v, causal=True)
        assert out.grad_fn is not None
        dq, dk, dv = torch.autograd.grad(out.sum(), (q, k, v))
    with torch.no_grad():
        assert fa3lite.flash_attn_func(q, k, v, causal=True).grad_fn is None
    ref = [t.detach().requires_grad_() for t in (q, k, v)]
    want = torch.autograd.grad(fa3lite.flash_attn_func(*ref, causal=True, backend="torch").sum(), ref)
    for got, w in zip((dq, dk, dv), want):
        torch.testing.assert_close(got, w)


def test_forward_mode_ad_still_goes_through_autograd(kernels_on_cpu):
    """A dual tensor needs the autograd Function (which has no jvp) to refuse it, not a silent drop."""
    import torch.autograd.forward_ad as fwAD

    q, k, v = _qkv((1, 5, 2, 64), torch.float32)
    fa3lite.flash_attn_func(q, k, v)
    with fwAD.dual_level():
        dual = fwAD.make_dual(q, torch.randn_like(q))
        with pytest.raises(RuntimeError):
            fwAD.unpack_dual(fa3lite.flash_attn_func(dual, k, v)).tangent.sum()


def test_sdpa_fast_path_matches(kernels_on_cpu):
    q, k, v = (t.transpose(1, 2) for t in _qkv())
    first = fa3lite.scaled_dot_product_attention(q, k, v, is_causal=True)
    again = fa3lite.scaled_dot_product_attention(q, k, v, is_causal=True)      # no grad: forward_bhsd plan
    assert torch.equal(first, again) and len(kernels_on_cpu) == 1
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    with_grad = fa3lite.scaled_dot_product_attention(*leaves, is_causal=True)  # autograd: the op path
    assert torch.equal(with_grad.detach(), first) and with_grad.grad_fn is not None
    want = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
    torch.testing.assert_close(again.float(), want, atol=2e-2, rtol=2e-2)


def test_remembered_signatures_stay_bounded(kernels_on_cpu, monkeypatch):
    monkeypatch.setattr(callkey, "_LIMIT", 16)
    for s in range(1, 200):
        q = torch.randn(1, s, 1, 64, dtype=torch.bfloat16)
        fa3lite.flash_attn_func(q, q, q)
        assert len(callkey._passed) <= 16


def test_kernels_take_needs_both_entries(monkeypatch):
    import types

    q, k, v = _qkv()
    monkeypatch.setattr(checks, "kernel_reasons", lambda q, k, v, softmax_scale=None, softcap=0.0: [])
    monkeypatch.setattr(ops, "_hopper", lambda: types.SimpleNamespace(forward=fallback.forward))
    assert not ops.kernels_take(q, k, v, 0.1)


def test_the_ops_remember_signatures_too(kernels_on_cpu):
    """torch.ops.fa3lite.fwd/bwd (direct calls, compiled graphs) skip the checks on a repeated
    signature and still refuse a changed, invalid one."""
    q, k, v = _qkv((1, 6, 2, 64))
    for _ in range(3):
        out, lse = torch.ops.fa3lite.fwd(q, k, v, 0.125, True, 0)
    assert len(kernels_on_cpu) == 1
    dout = torch.randn_like(out)
    for _ in range(2):
        grads = torch.ops.fa3lite.bwd(dout, q, k, v, out, lse, 0.125, True, 0)
    assert len(kernels_on_cpu) == 2
    want = fallback.backward(dout, q, k, v, out, lse, 0.125, True, 0)
    assert all(torch.equal(g, w) for g, w in zip(grads, want))
    with pytest.raises(fa3lite.InputError, match="lse.shape"):
        torch.ops.fa3lite.bwd(dout, q, k, v, out, lse[:, :, :3], 0.125, True, 0)
    with pytest.raises(fa3lite.InputError, match="k.dtype"):
        torch.ops.fa3lite.fwd(q, k.half(), v, 0.125, True, 0)


def test_op_keys_keep_scalar_types_apart():
    q, k, v = _qkv()
    assert callkey.op_key("fwd", (q, k, v), (0.1, True, 0)) != callkey.op_key("fwd", (q, k, v), (0.1, 1, 0))
    assert callkey.op_key("fwd", (q, k, v), (0.1, True, 0)) == callkey.op_key("fwd", _qkv(), (0.1, True, 0))


class _FakePlan:
    """A forward launch plan's interface (hopper.fwd._FwdPlan) running the fallback: calls append
    the layout to ``log`` (``out``, which makes no lse: ("out", layout)); ``backward_plans`` as the
    real one keeps them (filled by the test)."""

    def __init__(self, scale, causal, offset, bhsd, log):
        self.attention, self.bhsd, self.log, self.backward_plans = (scale, causal, offset, None, 0.0), bhsd, log, {}
        self.calls = {}

    def __call__(self, q, k, v, sink=None):
        self.log.append(self.bhsd)
        scale, causal, offset = self.attention[:3]
        if self.bhsd:
            out, lse = fallback.forward(*(t.transpose(1, 2) for t in (q, k, v)), scale, causal, 0)
            return out.transpose(1, 2), lse
        return fallback.forward(q, k, v, scale, causal, offset)

    def out(self, q, k, v, sink=None):
        """out alone (the real plan's kernel then stores no lse); logs ("out", layout)."""
        out = self(q, k, v, sink)[0]
        self.log[-1] = ("out", self.bhsd)
        return out


class _FakeBackwardPlan:
    """A backward launch plan's interface (hopper.bwd._BwdPlan) running the fallback on the
    addresses it is given, as the real one does: torch-layout tensors (``torch_layout``) are read as
    their (B, S, H, D) views; gradients come back (B, S, H, D) contiguous (torch_layout: as (B, H, S,
    D) tensors over that memory), None where not needed. The eager node asks for ``shared``
    gradients (views of one allocation may come back; these are separate tensors, which it takes too)."""

    any_copy = False

    def __init__(self, plan, need_dq, need_dkv, log):
        self.plan, self.need, self.log = plan, (need_dq, need_dkv), log

    def __call__(self, dout, q, k, v, out, lse, sink=None, torch_layout=False, shared=False):
        self.log.append(self.need)
        assert torch_layout == self.plan.bhsd and shared
        if torch_layout:
            dout, q, k, v, out = (t.transpose(1, 2) for t in (dout, q, k, v, out))
        scale, causal, offset = self.plan.attention[:3]
        dq, dk, dv = fallback.backward(dout, q, k, v, out, lse, scale, causal, offset, need_dq=self.need[0],
                                       need_dkv=self.need[1])
        grads = (None if g is None else g.contiguous() for g in (dq, dk, dv))
        return tuple(g.transpose(1, 2) if torch_layout and g is not None else g for g in grads)


def test_a_repeat_without_autograd_goes_straight_to_the_attached_plan(kernels_on_cpu, monkeypatch):
    from fa3lite import hopper

    planned, looked_up = [], []

    def forward_plan(q, k, v, scale, causal, offset, bhsd=False, local_offset=None, softcap=0.0, sink=None):
        looked_up.append(bhsd)
        return _FakePlan(scale, causal, offset, bhsd, planned)

    monkeypatch.setattr(hopper, "forward_plan", forward_plan)
    q, k, v = _qkv()
    first = fa3lite.flash_attn_func(q, k, v, causal=True)
    assert planned == []                                   # the first call builds and attaches
    # without autograd and without return_lse the plan makes out alone
    assert torch.equal(fa3lite.flash_attn_func(q, k, v, causal=True), first) and planned == [("out", False)]
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    out = fa3lite.flash_attn_func(*leaves, causal=True)    # autograd: the eager node runs the plan, lse kept
    fa3lite.flash_attn_func(*leaves, causal=True)
    assert planned == [("out", False), False, False] and looked_up == [False]  # attached once, never looked up again
    torch_leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    want = fa3lite.flash_attn_func(*torch_leaves, causal=True, backend="torch")
    assert torch.equal(out, want)
    dout = torch.randn_like(out)
    for got, exp in zip(torch.autograd.grad(out, leaves, dout), torch.autograd.grad(want, torch_leaves, dout)):
        assert torch.equal(got, exp)
    monkeypatch.setenv("FA3LITE_DEBUG", "1")               # other kernels: another key, checked again
    fa3lite.flash_attn_func(q, k, v, causal=True)
    before = [("out", False), False, False]
    assert planned == before and len(kernels_on_cpu) == 2
    monkeypatch.delenv("FA3LITE_DEBUG")
    first_lse = fa3lite.flash_attn_func(q, k, v, causal=True, return_lse=True)   # another key: checked
    again = fa3lite.flash_attn_func(q, k, v, causal=True, return_lse=True)       # the plan, lse made
    assert all(torch.equal(a, b) for a, b in zip(again, first_lse)) and planned == before + [False]
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
    with torch.no_grad():
        a = fa3lite.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
        b = fa3lite.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
        c = fa3lite.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
    assert torch.equal(a, c) and torch.equal(b, c) and planned == before + [False, ("out", True)]


def test_sdpa_with_autograd_records_one_node_in_torch_layout(kernels_on_cpu):
    """SDPA calls with inputs requiring grad go to the eager node in torch's (B, H, S, D) order: out's
    grad_fn is that node (no transpose nodes around it), repeats find the attached plan, and values
    and gradients are those of the same math on flash_attn-layout views (Sq == Sk: the masks agree)."""
    q, k, v = (t.transpose(1, 2).detach().requires_grad_() for t in _qkv())
    ref = [t.detach().transpose(1, 2).requires_grad_() for t in (q, k, v)]
    want = fa3lite.flash_attn_func(*ref, causal=True, backend="torch").transpose(1, 2)
    dout = torch.randn_like(want)
    want_grads = [g.transpose(1, 2) for g in torch.autograd.grad(want, ref, dout)]
    for _ in range(3):
        out = fa3lite.scaled_dot_product_attention(q, k, v, is_causal=True)
        # the first call's node returns lse too; repeats (planned) take the one with out alone
        assert type(out.grad_fn).__name__ in ("_EagerAttentionBackward", "_EagerAttentionOutBackward")
        assert torch.equal(out, want)
        for got, exp in zip(torch.autograd.grad(out, (q, k, v), dout), want_grads):
            assert got.shape == exp.shape and torch.equal(got, exp)
    assert len(kernels_on_cpu) == 1                         # checked once


@pytest.mark.parametrize("entry", ["flash", "flash_lse", "sdpa"])
def test_the_eager_node_runs_the_backward_plan_kept_on_the_forward_plan(kernels_on_cpu, monkeypatch, entry):
    """A repeat with autograd runs the attached forward plan; its backward runs the backward plan kept
    on it under dout's (B, S, H, D) layout and the flags (_planned_grads), for the gradients asked
    and only those, with the values of the torch math; a backward that records a graph, or a layout
    with no plan kept, takes the general path. Calls that return lse (a node with two outputs, lse
    not differentiable) and calls that do not (a node with one) alike."""
    from fa3lite import hopper

    plans, ran = [], []

    def forward_plan(q, k, v, scale, causal, offset, bhsd=False, local_offset=None, softcap=0.0, sink=None):
        plans.append(_FakePlan(scale, causal, offset, bhsd, []))
        return plans[-1]

    monkeypatch.setattr(hopper, "forward_plan", forward_plan)
    q, k, v = _qkv()

    def call(a, b, c):
        if entry == "flash":
            return fa3lite.flash_attn_func(a, b, c, causal=True)
        if entry == "flash_lse":
            out, lse = fa3lite.flash_attn_func(a, b, c, causal=True, return_lse=True)
            assert not lse.requires_grad and lse.shape == (a.shape[0], a.shape[2], a.shape[1])
            want_node = "_EagerAttentionBackward" if out.requires_grad else None
            assert (type(out.grad_fn).__name__ if out.grad_fn is not None else None) == want_node
            return out
        return fa3lite.scaled_dot_product_attention(a.transpose(1, 2), b.transpose(1, 2), c.transpose(1, 2),
                                                    is_causal=True).transpose(1, 2)

    call(q, k, v)                                          # checks and runs (flash_attn_func attaches its plan)
    call(q, k, v)                                          # SDPA attaches on its first repeat
    (plan,) = plans
    dout = torch.randn_like(q)
    for need in ((True, True, True), (True, False, False), (False, True, True)):
        leaves = [t.detach().requires_grad_(n) for t, n in zip((q, k, v), need)]
        asked = [t for t in leaves if t.requires_grad]
        ref = [t.detach().requires_grad_(n) for t, n in zip((q, k, v), need)]
        want = torch.autograd.grad(fa3lite.flash_attn_func(*ref, causal=True, backend="torch"),   # Sq == Sk
                                   [t for t in ref if t.requires_grad], dout)
        key = (dout.stride(), True, dout.shape, dout.dtype, False, need[0], need[1] or need[2])
        assert key not in plan.backward_plans
        got = torch.autograd.grad(call(*leaves), asked, dout)     # no backward plan yet: the general path
        assert ran == [] and all(torch.equal(g, w) for g, w in zip(got, want))
        plan.backward_plans[key] = _FakeBackwardPlan(plan, need[0], need[1] or need[2], ran)
        got = torch.autograd.grad(call(*leaves), asked, dout)
        assert ran == [(need[0], need[1] or need[2])], need
        assert all(g.shape == w.shape and torch.equal(g, w) for g, w in zip(got, want))
        ran.clear()
        out = call(*leaves)                                  # create_graph: the torch math, which has a graph
        got = torch.autograd.grad(out, asked, dout, create_graph=True)
        assert ran == [] and all(g.requires_grad for g in got)
    assert len(plans) == 1 and len(kernels_on_cpu) == 1


def test_find_tells_never_seen_from_remembered_with_or_without_a_plan():
    callkey.forget()
    q, k, v = _qkv()
    key = _key(q, k, v)
    assert callkey.find(None) is callkey.MISSING and callkey.find(key) is callkey.MISSING
    callkey.remember(key)
    assert callkey.find(key) is None and callkey.passed(key)
    marker = object()
    callkey.attach(key, marker)
    assert callkey.find(key) is marker and callkey.plan(key) is marker
    callkey.forget()
    assert callkey.find(key) is callkey.MISSING


# ------------------------------------------------------------------------------ flash_attn_with_kvcache
def _kv_call(q, kc, vc, **kw):
    args = dict(k=None, v=None, rotary_cos=None, rotary_sin=None, cache_seqlens=None, cache_batch_idx=None,
                cache_leftpad=None, page_table=None, softmax_scale=None, causal=True, window_size=(-1, -1),
                softcap=0.0, rotary_interleaved=True, num_splits=0, pack_gqa=None, return_softmax_lse=False,
                backend="auto")
    args.update(kw)
    return args


def _kv_key(q, kc, vc, **kw):
    a = _kv_call(q, kc, vc, **kw)
    return callkey.kvcache_key(q, kc, vc, a["k"], a["v"], a["rotary_cos"], a["rotary_sin"], a["cache_seqlens"],
                               a["cache_batch_idx"], a["cache_leftpad"], a["page_table"], a["softmax_scale"],
                               a["causal"], a["window_size"], a["softcap"], a["rotary_interleaved"], a["num_splits"],
                               a["pack_gqa"], a["return_softmax_lse"], a["backend"])


def _kv_inputs(b=2, sq=1, hq=4, hk=2, d=64, s_cache=40):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(b, sq, hq, d, generator=g)
    kc, vc = (torch.randn(b, s_cache, hk, d, generator=g) for _ in range(2))
    return q, kc, vc


@pytest.mark.parametrize("change", ["q shape", "cache stride", "dtype", "alignment", "int seqlens", "tensor seqlens",
                                    "num_splits", "pack_gqa", "window", "softcap type", "new rows", "debug"])
def test_kvcache_key_covers_what_the_checks_read(change, monkeypatch):
    q, kc, vc = _kv_inputs()
    seqlens = torch.tensor([3, 30], dtype=torch.int32)
    base = _kv_key(q, kc, vc, cache_seqlens=seqlens)
    assert base is not None and base == _kv_key(*_kv_inputs(), cache_seqlens=seqlens.clone())
    if change == "q shape":
        other = _kv_key(torch.randn(2, 2, 4, 64), kc, vc, cache_seqlens=seqlens)
    elif change == "cache stride":
        other = _kv_key(q, kc.transpose(1, 2).contiguous().transpose(1, 2), vc, cache_seqlens=seqlens)
    elif change == "dtype":
        other = _kv_key(q, kc, vc, cache_seqlens=seqlens.long())
    elif change == "alignment":
        flat = torch.randn(q.numel() + 1)
        other = _kv_key(flat[1:].view(q.shape), kc, vc, cache_seqlens=seqlens)
    elif change == "int seqlens":
        assert _kv_key(q, kc, vc, cache_seqlens=5) != _kv_key(q, kc, vc, cache_seqlens=6)
        other = _kv_key(q, kc, vc, cache_seqlens=5)
    elif change == "tensor seqlens":
        other = _kv_key(q, kc, vc, cache_seqlens=torch.tensor([3, 30, 1], dtype=torch.int32))
    elif change == "num_splits":
        other = _kv_key(q, kc, vc, cache_seqlens=seqlens, num_splits=3)
    elif change == "pack_gqa":
        other = _kv_key(q, kc, vc, cache_seqlens=seqlens, pack_gqa=False)
    elif change == "window":
        other = _kv_key(q, kc, vc, cache_seqlens=seqlens, window_size=(8, 0))
    elif change == "softcap type":
        assert _kv_key(q, kc, vc, cache_seqlens=seqlens, softcap=1) != _kv_key(q, kc, vc, cache_seqlens=seqlens,
                                                                               softcap=1.0)
        other = _kv_key(q, kc, vc, cache_seqlens=seqlens, softcap=1)
    elif change == "new rows":
        new = torch.randn(2, 1, 2, 64)
        other = _kv_key(q, kc, vc, cache_seqlens=seqlens, k=new, v=new)
    else:
        monkeypatch.setenv("FA3LITE_DEBUG", "1")
        other = _kv_key(q, kc, vc, cache_seqlens=seqlens)
    assert other != base
    # loose types get no key at all
    assert _kv_key(q, kc, vc, cache_seqlens=True) is None and _kv_key(q, kc, vc, num_splits=2.0) is None
    assert _kv_key(q, kc, vc, window_size=[-1, -1]) is None and _kv_key(q, kc, vc, pack_gqa=1) is None


@pytest.fixture
def varlen_kernels_on_cpu(monkeypatch):
    """The varlen "kernels" are the fallback for CPU tensors; counts launch-plan builds and calls."""
    from fa3lite import hopper

    seen = {"plans": 0, "planned_calls": 0, "checks": 0}
    monkeypatch.setattr(checks, "kernel_reasons", lambda *a, **k: [])

    def forward_varlen(q, k, v, cu_q, cu_k, max_q, scale, causal, causal_offset, local_offset=None, softcap=0.0,
                       sink=None, seqused_q=None, seqused_k=None, max_seqlen_k=0, num_splits=-1, pack_group=1):
        return fallback.forward_varlen(q, k, v, cu_q, cu_k, scale, causal, causal_offset, local_offset, softcap,
                                       sink, seqused_q, seqused_k, pack_group)

    def forward_varlen_plan(q, k, v, batch, max_q, scale, causal, causal_offset, local_offset, softcap, has_sink,
                            seqused, max_seqlen_k=0, num_splits=-1, rows_covered=False, pack_group=1, paged=None,
                            grouped=None):
        assert rows_covered     # the kvcache layout gives every query row to a sequence
        seen["plans"] += 1
        seen["paged"] = paged
        seen["aliased"] = grouped is not None

        def plan(q, k, v, cu_q, cu_k, seqused_q, seqused_k, sink, page_table=None, need_lse=True):
            out, lse = run(q, k, v, cu_q, cu_k, seqused_q, seqused_k, sink, page_table)
            return out, lse if need_lse else None   # as the kernel plan: lse only where asked for

        def run(q, k, v, cu_q, cu_k, seqused_q, seqused_k, sink, page_table):
            seen["planned_calls"] += 1
            assert (page_table is None) == (paged is None) and seqused_q is None
            # a repeat hands over the caches as they are (the kernels read addresses only): as rows here
            k, v = (t.view(-1, *t.shape[-2:]) for t in (k, v))
            if paged is not None:   # the pool read through the page table, as the kernel reads it
                assert not cu_k.any()
                page_size, pages = paged
                k, v = (t.view(-1, page_size, *t.shape[1:])[page_table.long()].flatten(0, 2) for t in (k, v))
                cu_k = torch.arange(0, (batch + 1) * page_size * pages, page_size * pages, dtype=torch.int32)
            if grouped is None:
                return forward_varlen(q, k, v, cu_q, cu_k, max_q, scale, causal, causal_offset, local_offset,
                                      softcap, sink, seqused_q, seqused_k, 0, -1, pack_group)
            # as the kernels read and write a step in place: q's rows (position, query head of a group)
            # through grouped.strides, out (B, Sq, Hq, Dv) and lse (B, Sq, Hq) through the same grouping
            b, sq, hq, d = q.shape
            g, hk = pack_group, hq // pack_group
            assert grouped.group_rows == g and grouped.box_groups > 0
            rows = q.as_strided((b * sq, g, hk, d), (*grouped.strides[:2], grouped.strides[2], 1))
            out, lse = forward_varlen(rows.reshape(b * sq * g, hk, d), k, v, cu_q, cu_k, max_q, scale, causal,
                                      causal_offset, local_offset, softcap, sink, None, seqused_k, 0, -1, g)
            dv = out.shape[2]
            full = torch.full((b, sq, hq, dv), float("nan"), dtype=out.dtype)
            full_lse = torch.full((b, sq, hq), float("nan"))
            full.as_strided((b * sq, g, hk, dv), (hq * dv, dv, g * dv, 1))[:] = out.view(b * sq, g, hk, dv)
            full_lse.as_strided((b * sq, g, hk), (hq, 1, g))[:] = lse.view(hk, b * sq, g).permute(1, 2, 0)
            return full, full_lse
        return plan

    real_problems = fa3lite.kvcache._problems

    def problems(*a):
        seen["checks"] += 1
        return real_problems(*a)

    def append_plan(k_cache, v_cache, k, v, cache_seqlens, batch_idx, page_table):
        """The append kernel's stand-in: torch's append (the GPU tests hold the kernel to its bits)."""
        def append(k_cache, v_cache, k, v, cache_seqlens, batch_idx, page_table, seqused=None):
            seen["kernel_appends"] += 1
            if seqused is not None:   # the key lengths after the append, as the kernel writes them
                seen["seqused_written"] += 1
                seqused.copy_(cache_seqlens + k.shape[1])
            rows = k_cache.shape[1] * (1 if page_table is None else page_table.shape[1])
            end = cache_seqlens.long() if isinstance(cache_seqlens, torch.Tensor) else torch.full((k.shape[0],),
                                                                                                cache_seqlens)
            row = torch.arange(k.shape[0]) if batch_idx is None else batch_idx.long()
            for cache, new in ((k_cache, k), (v_cache, v)):
                fa3lite.kvcache._append(cache, new, end, row, page_table)
            assert rows > 0
        return append

    seen["kernel_appends"] = seen["seqused_written"] = 0
    monkeypatch.setattr(hopper, "forward_varlen", forward_varlen)
    monkeypatch.setattr(hopper, "forward_varlen_plan", forward_varlen_plan)
    monkeypatch.setattr(hopper, "append_plan", append_plan)
    monkeypatch.setattr(fa3lite.kvcache, "_problems", problems)
    callkey.forget()
    yield seen
    callkey.forget()


@pytest.mark.parametrize("appends", [False, True])
@pytest.mark.parametrize("sq", [1, 3])
def test_kvcache_repeat_goes_to_the_plan_with_the_same_result(varlen_kernels_on_cpu, appends, sq):
    """A repeated signature skips the checks and the dispatch and calls the attached plan (which appends
    through the append kernel); results and the cache after an append equal the first call's (which
    took the full path, torch's append); lse too."""
    seen = varlen_kernels_on_cpu
    q, kc, vc = _kv_inputs(sq=sq)
    new = [torch.randn(2, sq, 2, 64, generator=torch.Generator().manual_seed(s)) for s in (1, 2)] if appends \
        else [None, None]
    seqlens = torch.tensor([3, 30], dtype=torch.int32)
    results, caches = [], []
    for _ in range(3):
        kcc, vcc = kc.clone(), vc.clone()
        results.append(fa3lite.flash_attn_with_kvcache(q, kcc, vcc, new[0], new[1], cache_seqlens=seqlens,
                                                       causal=True, return_softmax_lse=True))
        caches.append((kcc, vcc))
    # packed heads of a contiguous q: the plan reads its rows in place and writes out / lse in its layout
    assert seen == {"plans": 1, "planned_calls": 2, "checks": 1, "paged": None, "kernel_appends": 2 if appends else 0,
                    "seqused_written": 2 if appends else 0, "aliased": True}
    for (out, lse), (kcc, vcc) in zip(results[1:], caches[1:]):
        assert torch.equal(out, results[0][0]) and torch.equal(lse, results[0][1])
        assert torch.equal(kcc, caches[0][0]) and torch.equal(vcc, caches[0][1])
    want = fa3lite.flash_attn_with_kvcache(q, caches[0][0].clone() if not appends else kc.clone(),
                                           vc.clone(), new[0], new[1], cache_seqlens=seqlens, causal=True,
                                           return_softmax_lse=True, backend="torch")
    torch.testing.assert_close(results[0][0], want[0])
    # another signature is checked again; an invalid call is never hidden by a remembered one
    assert seen["checks"] == 2                             # backend="torch": another signature
    fa3lite.flash_attn_with_kvcache(q, kc.clone(), vc.clone(), cache_seqlens=seqlens, causal=False)
    assert seen["checks"] == 3
    with pytest.raises(fa3lite.InputError, match="num_splits"):
        fa3lite.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=seqlens, causal=True, num_splits=-1)
    with pytest.raises(fa3lite.InputError, match="cache_seqlens"):
        fa3lite.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=41, causal=True)


@pytest.mark.parametrize("page_size, in_place", [(16, True), (4, False)])
def test_kvcache_pages_in_place_through_the_plan(varlen_kernels_on_cpu, page_size, in_place):
    """A paged decode step whose page size the kernel's copies can tile (a multiple of 8 dividing the
    key block) reads the pool in place through the page table (the plan gets the pool and the table;
    cu_seqlens_k all zeros), else the pages are gathered; both equal the torch path, first call and
    repeats, with an append that crosses a page boundary."""
    seen = varlen_kernels_on_cpu
    g = torch.Generator().manual_seed(5)
    b, hq, hk, d, pages = 2, 4, 2, 64, 4
    q = torch.randn(b, 1, hq, d, generator=g)
    pool_k, pool_v = (torch.randn(b * pages + 3, page_size, hk, d, generator=g) for _ in range(2))
    table = torch.randperm(b * pages + 3, generator=g)[:b * pages].view(b, pages).to(torch.int32)
    new = [torch.randn(b, 1, hk, d, generator=g) for _ in range(2)]
    seqlens = torch.tensor([page_size - 1, 3 * page_size], dtype=torch.int32)
    want = fa3lite.flash_attn_with_kvcache(q, pool_k.clone(), pool_v.clone(), new[0], new[1], cache_seqlens=seqlens,
                                           page_table=table, causal=True, backend="torch")
    for _ in range(3):
        kc, vc = pool_k.clone(), pool_v.clone()
        got = fa3lite.flash_attn_with_kvcache(q, kc, vc, new[0], new[1], cache_seqlens=seqlens, page_table=table,
                                             causal=True)
        torch.testing.assert_close(got, want)
    assert seen["plans"] == 1 and seen["planned_calls"] == 3 - (0 if in_place else 1)
    assert seen["kernel_appends"] == 2   # the repeats append through the (stand-in) append kernel
    assert seen["paged"] == ((page_size, pages) if in_place else None)


_IN_PLACE = ("contiguous", "bhsd view", "wide rows", "rotated wide rows")


@pytest.mark.parametrize("q_layout", _IN_PLACE + ("positions apart", "odd stride", "pack_gqa off"))
@pytest.mark.parametrize("sq, hq", [(1, 6), (3, 6), (2, 10), (4, 66)])
def test_kvcache_decode_rows_read_in_place_where_the_layout_allows(varlen_kernels_on_cpu, q_layout, sq, hq):
    """A decode step with packed GQA plans its rows read in place -- q through one strided map, out and
    lse written in the step's layout -- where q's last dim is contiguous, its positions one stride
    apart and its strides multiples of 16 bytes (rows wider than D, rotary's fresh q, a (B, H, 1, D)
    tensor seen as (B, 1, H, D): not with more positions), and the 64-row tile holds whole groups
    (group 3 divides no 64 but 3 x 3 and 2 x 5 rows fit one tile; 4 x 33 rows of a group of 33
    neither: a copy). Not where the
    batch and position strides disagree, a stride is not a multiple of 16 bytes, or heads are not
    packed. First call and repeats equal the torch path, lse too."""
    seen = varlen_kernels_on_cpu
    g = torch.Generator().manual_seed(7)
    b, hk, d, s_cache = 3, 2, 64, 24
    q = {"bhsd view": lambda: torch.randn(b, hq, sq, d, generator=g).transpose(1, 2),
         "wide rows": lambda: torch.randn(b, sq, hq, 2 * d, generator=g)[..., :d],
         "rotated wide rows": lambda: torch.randn(b, sq, hq, 2 * d, generator=g)[..., :d],
         "positions apart": lambda: torch.randn(b, sq + 1, hq, d, generator=g)[:, :sq],
         "odd stride": lambda: torch.randn(b, sq, hq, d + 2, generator=g)[..., :d]}.get(
        q_layout, lambda: torch.randn(b, sq, hq, d, generator=g))()
    kc, vc = (torch.randn(b, s_cache, hk, d, generator=g) for _ in range(2))
    extra = {"pack_gqa": False} if q_layout == "pack_gqa off" else {}
    if q_layout == "rotated wide rows":
        angles = torch.rand(s_cache, d // 4, generator=g) * 6
        extra.update(k=torch.randn(b, sq, hk, d, generator=g), v=torch.randn(b, sq, hk, d, generator=g),
                     rotary_cos=angles.cos(), rotary_sin=angles.sin())
    seqlens = torch.tensor([0, 5, s_cache - sq], dtype=torch.int32)
    want = fa3lite.flash_attn_with_kvcache(q, kc.clone(), vc.clone(), cache_seqlens=seqlens, causal=True,
                                           return_softmax_lse=True, backend="torch", **extra)
    for _ in range(3):
        got = fa3lite.flash_attn_with_kvcache(q, kc.clone(), vc.clone(), cache_seqlens=seqlens, causal=True,
                                             return_softmax_lse=True, **extra)
        torch.testing.assert_close(got[0], want[0])
        torch.testing.assert_close(got[1], want[1])
        assert got[0].shape == (b, sq, hq, d) and got[1].shape == (b, hq, sq) and got[1].is_contiguous()
    assert seen["plans"] == 1 and seen["planned_calls"] == 2
    group_fits = (hq // hk) * sq <= 64 or 64 % (hq // hk) == 0
    # positions one stride apart: (b, s) contiguous, or one position (b's stride alone)
    one_stride = q_layout in _IN_PLACE and q_layout != "bhsd view" or q_layout in ("bhsd view", "positions apart") \
        and sq == 1
    assert seen["aliased"] == (group_fits and one_stride)
