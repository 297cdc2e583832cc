"""Shared test helpers: Hopper detection, a float64 reference attention, FA3's tolerance rule.

Import the helpers in a test module with ``from conftest import ref_attention, assert_close_fa3,
requires_hopper`` (pytest puts tests/ on sys.path). Tests marked ``gpu`` are skipped automatically
without a Hopper (sm_90) GPU.
"""
from __future__ import annotations

import math
import os
import pathlib
import subprocess
import sys

import pytest
import torch


def has_hopper() -> bool:
    """True when torch sees a CUDA device of compute capability 9.0."""
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


requires_hopper = pytest.mark.skipif(not has_hopper(), reason="needs a Hopper (sm_90) GPU")


@pytest.fixture(autouse=True)
def _fresh_call_signatures():
    """Each test starts with no remembered call signature (fa3lite.callkey): tests that stand in for
    the kernel checks on CPU tensors must not leave verdicts that real calls could never earn."""
    from fa3lite import callkey

    callkey.forget()
    yield
    callkey.forget()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failing test's report carries what a debug-build kernel's wait reported when it gave up
    (fa3lite.runtime.debug): the trap's own error names no kernel, block or barrier."""
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        from fa3lite.runtime import debug

        message = debug.report()
        if message:
            rep.sections.append(("fa3lite debug report", message))


def pytest_collection_modifyitems(config, items):
    if has_hopper():
        return
    skip = pytest.mark.skip(reason="marked gpu: needs a Hopper (sm_90) GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def ref_attention(q, k, v, scale=None, causal=False, causal_offset=0, dtype=torch.float64):
    """Attention computed naively in ``dtype`` (float64 by default: the reference; q.dtype: FA3's
    "pt", the same math in the input precision). Differentiable, no NaN for fully masked rows.

    q (B, Sq, Hq, D), k/v (B, Sk, Hk, D), Hq a multiple of Hk (query head h reads kv head
    h // (Hq // Hk)); key j visible to query i iff j <= i + causal_offset when causal.
    Returns out (B, Sq, Hq, D) and lse (B, Hq, Sq), both in ``dtype``; rows without a visible key
    give out 0 and lse -inf.
    """
    p, lse = ref_probs(q, k, scale, causal, causal_offset, dtype)
    groups = q.shape[2] // max(k.shape[2], 1)
    vc = v.to(dtype).repeat_interleave(groups, dim=2)
    out = torch.einsum("bhij,bjhd->bihd", p, vc)
    return out, lse


def ref_probs(q, k, scale=None, causal=False, causal_offset=0, dtype=torch.float64):
    """The softmax probabilities P (B, Hq, Sq, Sk) and lse (B, Hq, Sq) of ref_attention."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    groups = q.shape[2] // max(k.shape[2], 1)
    qc = q.to(dtype)
    kc = k.to(dtype).repeat_interleave(groups, dim=2)
    scores = torch.einsum("bihd,bjhd->bhij", qc, kc) * scale
    sq, sk = q.shape[1], k.shape[1]
    visible = torch.ones(sq, sk, dtype=torch.bool, device=q.device)
    if causal:
        rows = torch.arange(sq, device=q.device)[:, None]
        cols = torch.arange(sk, device=q.device)[None, :]
        visible = cols <= rows + causal_offset
    any_visible = visible.any(dim=-1, keepdim=True)  # (Sq, 1)
    masked = scores.masked_fill(~visible, -math.inf)
    # Rows with nothing visible get finite dummy scores for the logsumexp (their P is zero anyway),
    # which keeps both the forward and its autograd free of NaN.
    lse = torch.logsumexp(masked.masked_fill(~any_visible, 0.0), dim=-1)
    p = torch.exp(masked - lse.unsqueeze(-1))
    return p, lse.masked_fill(~any_visible.squeeze(-1), -math.inf)


def dsoftmax_atols(q, k, v, dout, scale=None, causal=False, causal_offset=0) -> tuple[float, float]:
    """Absolute slack of (dq, dk) for the rounding in D of dS = P * (dP - D), added to FA3's.

    The kernels (as FA2, FA3 and FA4) take D = rowsum(dO * O) from the forward's stored output,
    rounded to the input dtype, instead of rowsum(P * dP). In exact arithmetic the two are equal and
    dS cancels (each row of dS sums to 0; a row that sees one key has dS = 0, so the reference's dq
    and dk are exactly 0 there). Computed, D_i is off by about
        dD_i = 2 * u * ||dO_i * O_i||_2            (O rounded with unit roundoff u: independent
                                                    errors add in quadrature; 2 for margin)
             + 2 * sqrt(d) * eps32 * max|dO| * max|V|   (float32 dot products of length d)
    an error no later step cancels, and one the reference in the input dtype (torch's softmax
    backward) does not make. Small adversarial shapes (two keys, a large scale) make it the
    dominant one. It enters dS_ij as -P_ij * dD_i, so
        dq_i gets -scale * dD_i * (P @ K)_i        (one error per row: a signed sum, no quadrature)
        dk_j gets -scale * sum_i P_ij dD_i Q_i     (independent per row and query head: quadrature)
    whose maxima are returned, from the float64 P.
    """
    d = q.shape[-1]
    if q.numel() == 0 or k.numel() == 0:
        return 0.0, 0.0
    f64 = torch.float64
    u = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11}.get(q.dtype, torch.finfo(f64).eps)
    scale = d ** -0.5 if scale is None else scale
    q64, k64, v64, do64 = (t.detach().to(f64) for t in (q, k, v, dout))
    groups = q.shape[2] // k.shape[2]
    p, _ = ref_probs(q64, k64, scale, causal, causal_offset)                        # (B, Hq, Sq, Sk)
    out = torch.einsum("bhij,bjhd->bihd", p, v64.repeat_interleave(groups, dim=2))   # (B, Sq, Hq, D)
    noise = 2 * d ** 0.5 * torch.finfo(torch.float32).eps * do64.abs().max() * v64.abs().max()
    dd = 2 * u * (do64 * out).norm(dim=-1) + noise                                  # (B, Sq, Hq)
    pk = torch.einsum("bhij,bjhd->bihd", p, k64.repeat_interleave(groups, dim=2))   # (B, Sq, Hq, D)
    dq = scale * dd.unsqueeze(-1) * pk.abs()
    sq_terms = torch.einsum("bhij,bih,bihd->bjhd", p.square(), dd.square(), q64.square())  # per query head
    dk = scale * sq_terms.unflatten(2, (k.shape[2], groups)).sum(3).sqrt()         # per K/V head
    return dq.max().item(), dk.max().item()


def fa3_atol(ref) -> float:
    """FA3's absolute slack: twice the float32 rounding noise at the reference's magnitude
    (max|(r + 0.3) - 0.3 - r| in float32), floored at float32's eps, the noise of the O(1)
    intermediates (scores, dP) that an exactly-zero reference would otherwise leave no room for."""
    r = ref.detach().to(torch.float32)
    r = torch.where(torch.isfinite(r), r, 0.0)
    noise = ((r + 0.3) - 0.3 - r).abs().max().item() if r.numel() else 0.0
    return max(2 * noise, torch.finfo(torch.float32).eps)


def assert_close_fa3(out, ref, pt, atol, name):
    """FA3's rule: max|out - ref| <= 2 * max|pt - ref| + atol.

    ``ref`` is the float64 (or float32) reference, ``pt`` the same math in the input dtype. Non-finite
    entries of ``ref`` (lse = -inf of fully masked rows) must be matched exactly by ``out``; the rest
    is compared in float64.
    """
    assert out.shape == ref.shape == pt.shape, f"{name}: shapes out {tuple(out.shape)}, ref " \
        f"{tuple(ref.shape)}, pt {tuple(pt.shape)}"
    out64, ref64, pt64 = (t.detach().to(torch.float64) for t in (out, ref, pt))
    finite = torch.isfinite(ref64)
    bad = (~finite & (out64 != ref64)) | (finite & ~torch.isfinite(out64))
    if bad.any():
        idx = tuple(int(i) for i in bad.nonzero()[0])
        raise AssertionError(f"{name}: non-finite mismatch at {idx}: out {out64[idx].item()}, "
                             f"ref {ref64[idx].item()} ({int(bad.sum())} such entries)")
    if not finite.any():
        return
    err = torch.where(finite, (out64 - ref64).abs(), 0.0)
    pt_err = torch.where(finite, (pt64 - ref64).abs(), 0.0).max().item()
    bound = 2 * pt_err + atol
    worst = err.max().item()
    if not worst <= bound:
        idx = tuple(int(i) for i in (err == worst).nonzero()[0])
        raise AssertionError(f"{name}: max|out - ref| = {worst:.4g} > 2 * max|pt - ref| + atol = "
                             f"2 * {pt_err:.4g} + {atol:.4g} = {bound:.4g}; worst at {idx}: "
                             f"out {out64[idx].item():.6g}, ref {ref64[idx].item():.6g}")


# ----------------------------------------------------------------------------- Numba simulator suites
SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
"""True in the subprocess that runs a file's simulator cases (numba reads the variable once, at import)."""

sim = pytest.mark.skipif(not SIMULATOR, reason="runs in the simulator subprocess (test_simulator_suite)")


def run_simulator_suite(test_file: str, timeout_s: float) -> None:
    """Re-run ``test_file``'s non-GPU cases in a fresh Python with NUMBA_ENABLE_CUDASIM=1 and assert
    they passed: the variable must be set before numba.cuda is imported, so never in this process."""
    repo = pathlib.Path(__file__).resolve().parents[1]
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not gpu", test_file]
    res = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=timeout_s)
    log = res.stdout[-12000:] + res.stderr[-4000:]
    assert res.returncode == 0, log
    assert " passed" in res.stdout and "failed" not in res.stdout, log
