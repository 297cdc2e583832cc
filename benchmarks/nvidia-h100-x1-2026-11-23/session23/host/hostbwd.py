# The probe behind hostbwd_profile.log (run from the repository root with PYTHONPATH=$PWD on the
# device): host microseconds per call at B=1, S=128, H=16, d=128, bf16, calls issued back to back,
# for fa3lite's forward with grad, forward + backward, backward alone, and cuDNN's forward +
# backward; then a cProfile of 300 fa3lite forward + backward steps.
import cProfile, pstats, io, time, statistics, torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from fa3lite import flash_attn_func
B,S,H,D=1,128,16,128
q,k,v=(torch.randn(B,S,H,D,device="cuda",dtype=torch.bfloat16,requires_grad=True) for _ in range(3))
dout=torch.randn(B,S,H,D,device="cuda",dtype=torch.bfloat16)
qt,kt,vt=(torch.randn(B,H,S,D,device="cuda",dtype=torch.bfloat16,requires_grad=True) for _ in range(3))
dt=torch.randn(B,H,S,D,device="cuda",dtype=torch.bfloat16)
def host(step, calls=100, batches=5):
    for _ in range(20): step()
    ts=[]
    for _ in range(batches):
        torch.cuda.synchronize(); t0=time.perf_counter()
        for _ in range(calls): step()
        ts.append((time.perf_counter()-t0)/calls*1e6)
    torch.cuda.synchronize(); return statistics.median(ts)
fa_fb=lambda: torch.autograd.grad(flash_attn_func(q,k,v), (q,k,v), dout)
fa_f=lambda: flash_attn_func(q,k,v)
def cu_fb():
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        o=torch.nn.functional.scaled_dot_product_attention(qt,kt,vt)
    return torch.autograd.grad(o,(qt,kt,vt),dt)
for name, st in (("fa3lite fwd_grad", fa_f), ("fa3lite fwd_bwd", fa_fb), ("cudnn fwd_bwd", cu_fb)):
    print(name, round(host(st),1), "us", flush=True)
outs=[flash_attn_func(q,k,v) for _ in range(1)]
print("fa3lite bwd only", round(host(lambda: torch.autograd.grad(outs[0],(q,k,v),dout,retain_graph=True)),1), flush=True)
pr=cProfile.Profile()
for _ in range(20): fa_fb()
torch.cuda.synchronize(); pr.enable()
for _ in range(300): fa_fb()
pr.disable(); torch.cuda.synchronize()
s=io.StringIO(); pstats.Stats(pr,stream=s).sort_stats("tottime").print_stats(30); print(s.getvalue()[:9000])
