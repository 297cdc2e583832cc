"""Several Hopper GPUs: a call on cuda:1 while cuda:0 is current (and the reverse) computes what the
same call computes on the current device, leaves the current device and its context as they were, and
runs on the current stream of the tensors' device. Needs two GPUs (device kind nvidia-h200-x2)."""
from __future__ import annotations

import threading

import pytest
import torch

pytestmark = pytest.mark.gpu
if not (torch.cuda.is_available() and torch.cuda.device_count() >= 2
        and all(torch.cuda.get_device_capability(i) == (9, 0) for i in range(2))):
    pytest.skip("needs two Hopper (sm_90) GPUs", allow_module_level=True)

import fa3lite  # noqa: E402
from fa3lite.runtime import cdriver, driver  # noqa: E402


def _inputs(device, d=128, seed=0):
    g = torch.Generator().manual_seed(seed)
    shapes = ((2, 300, 8, d), (2, 333, 2, d), (2, 333, 2, d), (2, 300, 8, d))
    return [torch.randn(s, generator=g).to(device=device, dtype=torch.bfloat16) for s in shapes]


def _run(q, k, v, dout, causal):
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    out, lse = fa3lite.flash_attn_func(*leaves, causal=causal, deterministic=True, return_lse=True,
                                       backend="fa3lite")
    return [t.cpu() for t in (out, lse, *torch.autograd.grad(out, leaves, dout))]


@pytest.mark.parametrize("data,current", [(1, 0), (0, 1)])
@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("causal", [False, True])
def test_other_device_than_the_current_one(data, current, d, causal):
    torch.cuda.set_device(data)
    want = _run(*_inputs(f"cuda:{data}", d), causal)       # tensors on the current device
    torch.cuda.set_device(current)
    ctx_before = cdriver.current_context()
    got = _run(*_inputs(f"cuda:{data}", d), causal)        # the same tensors, another device current
    assert torch.cuda.current_device() == current
    assert cdriver.current_context() == ctx_before == driver.primary_context(current)
    for name, a, b in zip(("out", "lse", "dq", "dk", "dv"), got, want):
        assert torch.equal(a, b), name
    # later default-device allocations still land on the current device
    assert torch.empty(1, device="cuda").device.index == current


def test_results_agree_across_devices():
    outs = [_run(*_inputs(f"cuda:{i}"), True) for i in range(2)]
    for name, a, b in zip(("out", "lse", "dq", "dk", "dv"), *outs):
        assert torch.equal(a, b), name


@pytest.mark.parametrize("data", [0, 1])
def test_streams_of_each_device_are_honoured(data):
    """The tensors' device sleeps on its default stream; the call on a side stream of that device
    finishes first, so it ran there (not on another device's stream or the default one)."""
    torch.cuda.set_device(1 - data)
    dev = torch.device("cuda", data)
    q, k, v, dout = _inputs(dev)
    want = _run(q, k, v, dout, False)
    torch.cuda.synchronize(dev)
    side = torch.cuda.Stream(device=dev)
    with torch.cuda.device(dev):
        torch.cuda._sleep(2_000_000_000)
    with torch.cuda.stream(side):
        leaves = [t.detach().requires_grad_() for t in (q, k, v)]
        out, lse = fa3lite.flash_attn_func(*leaves, deterministic=True, return_lse=True, backend="fa3lite")
        grads = torch.autograd.grad(out, leaves, dout)
        done = torch.cuda.Event()
        done.record(side)
    done.synchronize()
    assert not torch.cuda.default_stream(dev).query(), "the default stream should still be sleeping"
    got = [t.cpu() for t in (out, lse, *grads)]
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    assert torch.cuda.current_device() == 1 - data
    torch.cuda.synchronize(dev)


def test_threads_on_both_devices_at_once():
    want = {i: _run(*_inputs(f"cuda:{i}", 64, seed=i), True) for i in range(2)}
    barrier = threading.Barrier(8)
    errors = []

    def work(i):
        try:
            dev = i % 2
            inputs = _inputs(f"cuda:{dev}", 64, seed=dev)
            barrier.wait()
            for _ in range(5):
                got = _run(*inputs, True)
                assert all(torch.equal(a, b) for a, b in zip(got, want[dev]))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(f"thread {i}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
