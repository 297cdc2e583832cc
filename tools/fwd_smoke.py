"""Quick forward check on a GPU: a few shapes against an fp32 reference, then one timing.

Used on the device while developing (debug build: deadlocks trap). Not part of the test suite.
"""
import math
import sys

import torch

from fa3lite import hopper


def ref(q, k, v, scale, causal, offset):
    qf, kf, vf = q.float(), k.float(), v.float()
    g = q.shape[2] // k.shape[2]
    kf = kf.repeat_interleave(g, dim=2)
    vf = vf.repeat_interleave(g, dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", qf, kf) * scale
    if causal:
        i = torch.arange(q.shape[1], device=q.device)[:, None]
        j = torch.arange(k.shape[1], device=q.device)[None, :]
        s = s.masked_fill(j > i + offset, -math.inf)
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    return torch.einsum("bhqk,bkhd->bqhd", p, vf), lse


def check(B, Sq, Sk, Hq, Hk, D, dtype, causal):
    q = torch.randn(B, Sq, Hq, D, device="cuda", dtype=dtype)
    k = torch.randn(B, Sk, Hk, D, device="cuda", dtype=dtype)
    v = torch.randn(B, Sk, Hk, D, device="cuda", dtype=dtype)
    scale = D ** -0.5
    off = Sk - Sq
    out, lse = hopper.forward(q, k, v, scale, causal, off)
    torch.cuda.synchronize()
    r, rl = ref(q, k, v, scale, causal, off)
    err = (out.float() - r).abs().max().item()
    fin = torch.isfinite(rl)
    lerr = (lse[fin] - rl[fin]).abs().max().item() if fin.any() else 0.0
    lse_inf_ok = bool((lse[~fin] == -math.inf).all())
    nan = torch.isnan(out).any().item()
    ok = err < 2e-2 and lerr < 1e-2 and lse_inf_ok and not nan
    print(f"{'OK ' if ok else 'BAD'} B={B} Sq={Sq} Sk={Sk} Hq={Hq} Hk={Hk} D={D} {dtype} causal={causal}: "
          f"out err {err:.2e} lse err {lerr:.2e} inf_ok={lse_inf_ok} nan={nan}", flush=True)
    return ok


def fwd_flops(B, H, S, D, causal):
    """Forward FLOPs of a (B, S, H, D) self-attention (halved under a causal mask)."""
    return 4 * B * H * S * S * D / (2 if causal else 1)


def median_call_ms(call, reps=10, warmup=3):
    """Median of `reps` single calls timed between CUDA events, after `warmup` untimed ones."""
    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        st.record()
        call()
        en.record()
        torch.cuda.synchronize()
        times.append(st.elapsed_time(en))
    return sorted(times)[len(times) // 2]


def bench(D, causal, S, dtype=torch.bfloat16):
    H = 2048 // D
    B = 16384 // S
    q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=dtype) for _ in range(3))
    ms = median_call_ms(lambda: hopper.forward(q, k, v, D ** -0.5, causal, 0))
    print(f"bench D={D} causal={causal} S={S}: {ms:.3f} ms {fwd_flops(B, H, S, D, causal) / ms / 1e9:.1f} TFLOP/s",
          flush=True)


def bench_sdpa(D, causal, S, dtype=torch.bfloat16):
    """cuDNN through torch SDPA at bench()'s shape, timed the same way (reference for ratios)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    H, B = 2048 // D, 16384 // S
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=dtype) for _ in range(3))
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        ms = median_call_ms(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal))
    print(f"cudnn D={D} causal={causal} S={S}: {ms:.3f} ms {fwd_flops(B, H, S, D, causal) / ms / 1e9:.1f} TFLOP/s",
          flush=True)


if __name__ == "__main__":
    torch.manual_seed(0)
    if "--bench-only" in sys.argv:
        for D in (64, 128, 256):
            for causal in (False, True):
                for S in (1024, 4096, 16384):
                    bench(D, causal, S)
        sys.exit(0)
    ok = True
    for D in (64, 128, 256):
        for causal in (False, True):
            for (Sq, Sk) in ((128, 128), (113, 203), (239, 1), (1, 239), (1024, 1023)):
                ok &= check(2, Sq, Sk, 4, 2, D, torch.bfloat16, causal)
    ok &= check(1, 300, 300, 2, 2, 128, torch.float16, True)
    print("ALL OK" if ok else "FAILURES", flush=True)
    if "--bench" in sys.argv:
        for D in (64, 128, 256):
            for causal in (False, True):
                bench(D, causal, 4096)
