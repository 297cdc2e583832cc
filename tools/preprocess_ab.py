"""dPsum = rowsum(dO * O): the CUDA preprocess of the backward vs the Numba aux kernel, one run."""
import torch

from fa3lite.hopper import bwd as hopper_bwd
from fa3lite.numba_kernels import aux

for B, S, H, D in ((4, 4096, 16, 128), (16, 1024, 16, 128), (1, 16384, 32, 64)):
    dout = torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16)
    out = torch.randn_like(dout)
    lse = torch.randn(B, H, S, device="cuda")
    q = torch.randn_like(dout)

    def numba_path():
        return aux.dot_do_o(dout, out)

    def cuda_path():  # the whole backward's preprocess launch alone is internal; time it via the profiler
        return hopper_bwd.backward(dout, q, q, q, out, lse, D ** -0.5, False, 0)

    for name, fn in (("numba dot_do_o", numba_path),):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        st, en = torch.cuda.Event(True), torch.cuda.Event(True)
        st.record()
        for _ in range(20):
            fn()
        en.record()
        torch.cuda.synchronize()
        print(f"{name:16s} B={B} S={S} H={H} D={D}: {st.elapsed_time(en) / 20 * 1000:.1f} us", flush=True)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            cuda_path()
        torch.cuda.synchronize()
    for e in prof.key_averages():
        if "preprocess" in e.key:
            print(f"{'cuda preprocess':16s} B={B} S={S} H={H} D={D}: {e.device_time:.1f} us (mean of {e.count})",
                  flush=True)
