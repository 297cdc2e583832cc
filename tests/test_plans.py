"""The launch plans' host side on the CPU (kernels, maps and launches stubbed): what a call hands
the driver, and that a backward plan reads nothing of its tensors but addresses, dtype and device --
the eager node (ops._planned_grads) hands it SDPA's (B, H, S, D) tensors as they are."""
from __future__ import annotations

import contextlib

import pytest
import torch

from fa3lite.hopper import bwd, common
from fa3lite.runtime import launch


@pytest.fixture
def stub_kernels(monkeypatch):
    """_BwdPlan builds on the CPU; launches record (kernel name, head values) instead of running."""
    launched = []

    class Maker:
        def __init__(self, *args):
            pass

        def __call__(self, ptr):
            return ptr.to_bytes(8, "little") * 16

    monkeypatch.setattr(bwd, "_kernels", lambda variant, dev: tuple(
        launch.Loaded(i, 0, name) for i, name in enumerate(("pre", "main", "post"))))
    monkeypatch.setattr(bwd.tma, "MapMaker", Maker)
    monkeypatch.setattr(bwd, "device_index", lambda t: 0)
    monkeypatch.setattr(bwd, "on_device", lambda dev: contextlib.nullcontext())
    monkeypatch.setattr(bwd.cdriver, "stream", lambda handle: handle)
    monkeypatch.setattr(bwd.launch, "stream_handle", lambda dev: 0)
    monkeypatch.setattr(launch.Prepared, "launch", lambda self, stream, *head: launched.append((self.kernel.name, head)))
    return launched


def test_a_backward_plan_reads_only_addresses_dtype_and_device(stub_kernels):
    B, S, H, D = 2, 40, 3, 64
    q, k, v, dout, out = (torch.randn(B, H, S, D, dtype=torch.bfloat16).transpose(1, 2) for _ in range(5))
    lse = torch.randn(B, H, S)
    plan = bwd._BwdPlan(dout, q, k, v, out, lse, 0.125, common.band(False, 0, None), False, True, True, 0.0, False)
    assert not plan.any_copy
    flash = plan(dout, q, k, v, out, lse)
    torch_layout = plan(*(t.transpose(1, 2) for t in (dout, q, k, v, out)), lse)   # SDPA's tensors as they are
    for grads in (flash, torch_layout):
        assert [tuple(g.shape) for g in grads] == [(B, S, H, D)] * 3
        assert all(g.is_contiguous() and g.dtype == q.dtype for g in grads)
    (pre1, main1, post1), (pre2, main2, post2) = stub_kernels[:3], stub_kernels[3:]
    assert [name for name, _ in stub_kernels] == ["pre", "main", "post"] * 2
    assert pre1[1][:3] == pre2[1][:3] == (dout.data_ptr(), out.data_ptr(), lse.data_ptr())
    assert main1[1][:4] == main2[1][:4]   # the same maps: the same addresses
