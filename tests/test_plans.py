"""The launch plans' host side on the CPU (kernels, maps and launches stubbed): what a call hands
the driver, and that a backward plan reads nothing of its tensors but addresses, dtype and device --
the eager node (ops._planned_grads) hands it SDPA's (B, H, S, D) tensors as they are, and gets their
gradients in that order without a view op (torch_layout)."""
from __future__ import annotations

import contextlib

import pytest
import torch

from fa3lite.hopper import bwd, common
from fa3lite.runtime import launch


def _map_of(ptr: int) -> bytes:
    """A stub tensor map: the address it was made for, repeated to a map's 128 bytes."""
    return ptr.to_bytes(8, "little") * 16


def _stub_maps(monkeypatch, module) -> list[int]:
    """The plans' map makers (``module``'s tma) give _map_of; returns the addresses encoded, in order."""
    encoded = []

    def maker(*args):
        def make(ptr):
            encoded.append(ptr)
            return _map_of(ptr)
        return make

    monkeypatch.setattr(module.tma, "MapMaker", maker)
    return encoded


def _stub_launches(monkeypatch, module, record) -> list:
    """What a plan in ``module`` asks of the device (its index, SM count, current device, stream) made
    up, and its launches appending record(prepared, head values) to the returned list instead of running."""
    launched = []
    monkeypatch.setattr(module, "device_index", lambda t: 0)
    monkeypatch.setattr(module, "sm_count", lambda dev: 132)     # persistent grids and GQA's head walk size by it
    monkeypatch.setattr(module, "on_device", lambda dev: contextlib.nullcontext())
    monkeypatch.setattr(module.cdriver, "stream", lambda handle: handle)
    monkeypatch.setattr(module.launch, "stream_handle", lambda dev: 0)
    monkeypatch.setattr(launch.Prepared, "launch", lambda self, stream, *head: launched.append(record(self, head)))
    return launched


@pytest.fixture
def stub_kernels(monkeypatch):
    """_BwdPlan builds on the CPU; launches record (kernel name, head values) instead of running."""
    monkeypatch.setattr(bwd, "_kernels", lambda variant, dev: tuple(
        launch.Loaded(i, 0, name) for i, name in enumerate(("pre", "main", "post"))))
    _stub_maps(monkeypatch, bwd)
    return _stub_launches(monkeypatch, bwd, lambda prepared, head: (prepared.kernel.name, head))


# MHA; GQA with dK/dV summed over the group after the kernel (a grid this small) or in it (the head walk)
@pytest.mark.parametrize("hk,walk", [(3, False), (1, False), (1, True)], ids=["mha", "gqa-f32", "gqa-walk"])
def test_a_backward_plan_reads_only_addresses_dtype_and_device(stub_kernels, monkeypatch, hk, walk):
    if walk:
        monkeypatch.setattr(bwd, "GROUPED_MIN_CTAS_PER_SM", 0)
    B, S, H, D = 2, 40, 3, 64
    q, dout, out = (torch.randn(B, H, S, D, dtype=torch.bfloat16).transpose(1, 2) for _ in range(3))
    k, v = (torch.randn(B, hk, S, D, dtype=torch.bfloat16).transpose(1, 2) for _ in range(2))
    lse = torch.randn(B, H, S)
    plan = bwd._BwdPlan(dout, q, k, v, out, lse, 0.125, common.band(False, 0, None), False, True, True, 0.0, False)
    assert not plan.any_copy
    assert plan.dkv_f32 == (hk != H and not walk)
    flash = plan(dout, q, k, v, out, lse)
    torch_layout = plan(*(t.transpose(1, 2) for t in (dout, q, k, v, out)), lse, None, True)   # SDPA's tensors
    assert [tuple(g.shape) for g in flash] == [(B, S, H, D)] + [(B, S, hk, D)] * 2
    assert [tuple(g.shape) for g in torch_layout] == [(B, H, S, D)] + [(B, hk, S, D)] * 2
    assert all(g.is_contiguous() and g.dtype == q.dtype for g in flash)
    assert all(g.transpose(1, 2).is_contiguous() and g.dtype == q.dtype for g in torch_layout)
    assert torch_layout[0]._base is None   # made in that shape, not a view
    (pre1, main1, post1), (pre2, main2, post2) = stub_kernels[:3], stub_kernels[3:]
    assert [name for name, _ in stub_kernels] == ["pre", "main", "post"] * 2
    assert pre1[1][:3] == pre2[1][:3] == (dout.data_ptr(), out.data_ptr(), lse.data_ptr())
    assert main1[1][:4] == main2[1][:4]   # the same maps: the same addresses


@pytest.mark.parametrize("need", ["all", "dq", "dkv"])
@pytest.mark.parametrize("torch_layout", [False, True], ids=["flash", "torch"])
@pytest.mark.parametrize("work_max", [None, 1024], ids=["work-shared", "work-own"])
def test_the_eager_node_gets_its_gradients_from_one_allocation(stub_kernels, monkeypatch, need, torch_layout,
                                                               work_max):
    """plan(..., shared=True), the eager node's call: dq, dk, dv are disjoint views of one allocation at
    256-byte aligned offsets, with the shapes and strides of separate tensors; the work buffer (the
    addresses the launches get) lies inside it up to SHARED_WORK_MAX_BYTES, after the gradients, and
    in an allocation of its own past that. Without shared, every gradient has its own storage."""
    if work_max is not None:
        monkeypatch.setattr(bwd, "SHARED_WORK_MAX_BYTES", work_max)
    B, S, H, D = 2, 40, 3, 64
    need_dq, need_dkv = need != "dkv", need != "dq"
    q, k, v, dout, out = (torch.randn(B, H, S, D, dtype=torch.bfloat16).transpose(1, 2) for _ in range(5))
    lse = torch.randn(B, H, S)
    plan = bwd._BwdPlan(dout, q, k, v, out, lse, 0.125, common.band(False, 0, None), False, need_dq, need_dkv,
                        0.0, False)
    args = (*(t.transpose(1, 2) for t in (dout, q, k, v, out)), lse, None, True) if torch_layout else \
        (dout, q, k, v, out, lse, None, False)
    separate = plan(*args)
    shared = plan(*args, shared=True)
    for a, b in zip(separate, shared):
        assert (a is None) == (b is None)
        if a is not None:
            assert (a.shape, a.stride(), a.dtype) == (b.shape, b.stride(), b.dtype)
    grads = [g for g in shared if g is not None]
    storage = grads[0].untyped_storage()
    assert all(g.untyped_storage().data_ptr() == storage.data_ptr() for g in grads)
    spans = sorted((g.data_ptr(), g.data_ptr() + g.numel() * g.element_size()) for g in grads)
    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:]))
    assert all((start - storage.data_ptr()) % 256 == 0 for start, _ in spans)
    assert len({g.untyped_storage().data_ptr() for g in separate if g is not None}) == len(grads)
    lse_log2 = [head for name, head in stub_kernels if name == "pre"][-1][3]
    work_bytes = 4 * plan.work_floats
    inside = storage.data_ptr() <= lse_log2 < storage.data_ptr() + storage.nbytes()
    assert inside == (work_max is None) == (work_bytes <= bwd.SHARED_WORK_MAX_BYTES)
    if inside:
        assert lse_log2 >= spans[-1][1]   # after the gradients


def test_a_gqa_or_sink_backward_keeps_separate_allocations(stub_kernels):
    """f32 dK/dV (summed over the group after the kernel) and a sink (whose gradient reads the work
    buffer as tensors) keep the separate buffers even when the node asks for shared ones."""
    B, S, H, D = 2, 40, 4, 64
    q, dout, out = (torch.randn(B, S, H, D, dtype=torch.bfloat16) for _ in range(3))
    k, v = (torch.randn(B, S, 1, D, dtype=torch.bfloat16) for _ in range(2))
    lse = torch.randn(B, H, S)
    gqa = bwd._BwdPlan(dout, q, k, v, out, lse, 0.125, common.band(False, 0, None), False, True, True, 0.0, False)
    assert gqa.dkv_f32 and gqa.shared is None
    dq, dk, dv = gqa(dout, q, k, v, out, lse, shared=True)
    assert len({g.untyped_storage().data_ptr() for g in (dq, dk, dv)}) == 3
    sink = bwd._BwdPlan(dout, q, q, q, out, lse, 0.125, common.band(False, 0, None), False, True, True, 0.0, True)
    assert sink.shared is None


def test_the_append_kernel_takes_only_what_it_can_copy_in_16_byte_chunks(monkeypatch):
    """hopper.append_plan: None (torch's append instead) for 32-bit elements, a last dim that is not
    contiguous, a misaligned address or stride, non-contiguous index tensors; a plan otherwise."""
    from fa3lite.hopper import append

    monkeypatch.setattr(append, "_AppendPlan", lambda *args: "plan")
    b, s_new, hk, d = 2, 3, 2, 64

    def call(k=None, k_cache=None, seqlens=None, table=None, dtype=torch.bfloat16):
        k = torch.zeros(b, s_new, hk, d, dtype=dtype) if k is None else k
        k_cache = torch.zeros(5, 16, hk, d, dtype=dtype) if k_cache is None else k_cache
        seqlens = torch.zeros(b, dtype=torch.int32) if seqlens is None else seqlens
        return append.append_plan(k_cache, k_cache.clone(), k, k.clone(), seqlens, None, table)

    assert call() == "plan" and call(seqlens=7) == "plan"
    assert call(table=torch.zeros(b, 4, dtype=torch.int32)) == "plan"
    assert call(dtype=torch.float32) is None
    assert call(k=torch.zeros(b, s_new, hk, 2 * d, dtype=torch.bfloat16)[..., ::2]) is None     # last dim strided
    assert call(k=torch.zeros(b, s_new, hk, d + 1, dtype=torch.bfloat16)[..., 1:]) is None      # misaligned
    assert call(k_cache=torch.zeros(5, 16, hk, d + 4, dtype=torch.bfloat16)[..., :d]) is None   # stride of 68
    assert call(seqlens=torch.zeros(2 * b, dtype=torch.int32)[::2]) is None
    assert call(table=torch.zeros(4, b, dtype=torch.int32).t()) is None


@pytest.mark.parametrize("causal", [False, True])
def test_a_causal_varlen_forward_claims_each_sequence_longest_first_in_head_groups(monkeypatch, causal):
    """The persistent varlen forward's parameter block: with a causal mask lpt_heads sizes the head
    groups of each sequence's longest-first claim order (scheduler.cuh varlen_tile) from the longest
    key range's K and V rows against half of L2 (common.lpt_group); without a mask it is 0 (head by
    head, block by block)."""
    from fa3lite.hopper import varlen
    from fa3lite.variants import FWD_PARAMS

    monkeypatch.setattr(varlen.fwd, "_loaded", lambda variant, dev: launch.Loaded(0, variant.smem_bytes, "fwd"))
    monkeypatch.setattr(varlen, "device_index", lambda t: 0)
    monkeypatch.setattr(varlen, "sm_count", lambda dev: 132)
    monkeypatch.setattr(common, "l2_bytes", lambda device: 50 * 2**20)
    monkeypatch.setattr(varlen.tma, "MapMaker", lambda *args: None)
    total, heads, d, longest = 4096, 16, 128, 3970
    q, k, v = (torch.empty(total, heads, d, dtype=torch.bfloat16) for _ in range(3))
    mask = common.band(causal, 0, None)
    plan = varlen._VarlenPlan(q, k, v, 7, longest, longest, d ** -0.5, mask, 0.0, False, -1)
    offset = FWD_PARAMS.offsets["lpt_heads"]
    got = int.from_bytes(plan.template[offset:offset + 4], "little", signed=True)
    # 3970 keys of K and V at d = 128, bf16: 2 MB a head; 25 MB hold 12, the power of two below: 8
    assert got == (8 if causal else 0)


@pytest.mark.parametrize("head_dim,causal", [(128, False), (256, True), (64, True)],
                         ids=["d128", "d256-direct-o", "d64"])
def test_a_forward_plan_hands_the_driver_its_maps_and_out(monkeypatch, head_dim, causal):
    """_FwdPlan builds and launches on the CPU (kernel, maps and the launch stubbed): the call's head
    is q, k, v's maps, O's map -- blank for a kernel that stores O from registers (kDirectO, which
    reads none, so none is encoded) -- then the LSE, tile counter, sink and out addresses."""
    from fa3lite.hopper import fwd
    from fa3lite.variants import FwdVariant

    monkeypatch.setattr(fwd, "_loaded", lambda variant, dev: launch.Loaded(0, variant.smem_bytes, "fwd"))
    monkeypatch.setattr(common, "l2_bytes", lambda device: 50 * 2**20)
    encoded = _stub_maps(monkeypatch, fwd)
    launched = _stub_launches(monkeypatch, fwd, lambda prepared, head: head)
    B, S, H = 2, 300, 4
    q, k, v = (torch.randn(B, S, H, head_dim, dtype=torch.bfloat16) for _ in range(3))
    plan = fwd._FwdPlan(q, k, v, head_dim ** -0.5, causal, 0)
    direct = FwdVariant(head_dim, "bf16", causal, tile=fwd.fwd_tile(head_dim, causal, S)).direct_o
    assert direct == (head_dim == 256)
    out, lse = plan(q, k, v)
    assert out.shape == (B, S, H, head_dim) and lse.shape == (B, H, S)
    (head,) = launched
    maps, (lse_ptr, _, sink_ptr, out_ptr) = head[:4], head[4:]
    assert maps[:3] == tuple(_map_of(t.data_ptr()) for t in (q, k, v))
    assert maps[3] == (bytes(128) if direct else _map_of(out.data_ptr()))
    assert (lse_ptr, sink_ptr, out_ptr) == (lse.data_ptr(), 0, out.data_ptr())
    assert sorted(encoded) == sorted([t.data_ptr() for t in (q, k, v)] + ([] if direct else [out.data_ptr()]))
    assert plan.out(q, k, v).shape == out.shape and launched[1][4] == 0   # no LSE: its address 0


def test_a_varlen_forward_hands_the_driver_a_blank_o_map_and_its_addresses(monkeypatch):
    """_VarlenPlan launches on the CPU (kernel, maps and the launch stubbed): q, k, v's maps, a blank O
    map (the packed O is written row by row, through no map), then the LSE, workspace, sink and out
    addresses ahead of the sequences' offsets."""
    from fa3lite.hopper import varlen

    monkeypatch.setattr(varlen.fwd, "_loaded", lambda variant, dev: launch.Loaded(0, variant.smem_bytes, "fwd"))
    monkeypatch.setattr(common, "l2_bytes", lambda device: 50 * 2**20)
    _stub_maps(monkeypatch, varlen)
    launched = _stub_launches(monkeypatch, varlen, lambda prepared, head: head)
    lengths, heads, d = (5, 0, 130), 2, 256
    cu = torch.tensor((0,) + lengths, dtype=torch.int32).cumsum(0, dtype=torch.int32)
    q, k, v = (torch.randn(int(cu[-1]), heads, d, dtype=torch.bfloat16) for _ in range(3))
    plan = varlen._VarlenPlan(q, k, v, len(lengths), max(lengths), max(lengths), d ** -0.5, common.band(True, 0, None),
                              0.0, False, -1)
    out, lse = plan(q, k, v, cu, cu)
    (head,) = launched
    assert head[:3] == tuple(_map_of(t.data_ptr()) for t in (q, k, v))
    assert head[3] == bytes(128)
    assert head[4] == lse.data_ptr() and head[7] == out.data_ptr() and head[8] == cu.data_ptr()


def test_the_work_buffer_layout():
    """bwd.work_floats / work_tail, which both backward plans use: the accumulator, the counters (address
    0 where there are none), lse_log2, dpsum, then the tile counter, back to back in floats."""
    assert bwd.work_floats(100, 64, 10) == 100 + 64 + 20 + bwd.SCHED_WORDS
    assert bwd.work_tail(4096, 100, 64, 10) == (4096 + 400, 4096 + 656, 4096 + 696, 4096 + 736)
    assert bwd.work_tail(4096, 100, 0, 10) == (0, 4096 + 400, 4096 + 440, 4096 + 480)
