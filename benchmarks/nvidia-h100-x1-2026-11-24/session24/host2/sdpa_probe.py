"""Host time of the SDPA entry vs flash_attn_func (B=1, S=128, H=16, d=128), and where it goes."""
import cProfile, pstats, time, io
import torch
import fa3lite

def per_call(fn, n=2000):
    for _ in range(50): fn()
    torch.cuda.synchronize()
    best = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n // 5): fn()
        best.append((time.perf_counter() - t) / (n // 5) * 1e6)
        torch.cuda.synchronize()
    return sorted(best)[len(best) // 2]

B, S, H, D = 1, 128, 16, 128
q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
qc, kc, vc = (t.contiguous() for t in (qt, kt, vt))
cases = {
    "flash_attn_func": lambda: fa3lite.flash_attn_func(q, k, v, backend="fa3lite"),
    "sdpa bhsd views": lambda: fa3lite.scaled_dot_product_attention(qt, kt, vt, backend="fa3lite"),
    "sdpa bench adapter": lambda: fa3lite.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), backend="fa3lite").transpose(1, 2),
    "sdpa bhsd contiguous": lambda: fa3lite.scaled_dot_product_attention(qc, kc, vc, backend="fa3lite"),
    "torch sdpa cudnn adapter": lambda: torch.nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)).transpose(1, 2),
    "3 transposes": lambda: (q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)),
}
for name, fn in cases.items():
    print(f"{name:28s} {per_call(fn):7.1f} us", flush=True)
pr = cProfile.Profile()
fn = cases["sdpa bhsd views"]
pr.enable()
for _ in range(2000): fn()
pr.disable()
s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(18); print(s.getvalue())
