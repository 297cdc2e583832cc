"""The forward of test_many_tiles_per_cta's shape (d, causal from argv), for compute-sanitizer:
every CTA takes several tiles of many sequences; rows are checked for NaN (inputs have NaN gaps)."""
import math
import sys
import torch
from fa3lite import flash_attn_varlen_func

d, causal = int(sys.argv[1]), sys.argv[2] == "1"
draw = torch.Generator().manual_seed(d + causal)
lens_q = torch.randint(0, 300, (40,), generator=draw).tolist() + [1, 400, 300, 0]
lens_k = torch.randint(0, 300, (40,), generator=draw).tolist() + [1, 100, 0, 9]


def pack(lens, h):
    own = [n + 2 for n in lens]
    cu = torch.tensor([0] + torch.tensor(own).cumsum(0).tolist(), dtype=torch.int32, device="cuda")
    t = torch.full((sum(own) + 7, h, d), math.nan, device="cuda", dtype=torch.bfloat16)
    for start, n in zip(cu.tolist(), lens):
        t[start:start + n] = torch.randn(n, h, d, device="cuda").to(torch.bfloat16)
    return t, cu


(q, cu_q), (k, cu_k), (v, _) = pack(lens_q, 16), pack(lens_k, 4), pack(lens_k, 4)
used_q, used_k = (torch.tensor(x, dtype=torch.int32, device="cuda") for x in (lens_q, lens_k))
out = flash_attn_varlen_func(q, k, v, cu_q, cu_k, max(lens_q), max(lens_k), seqused_q=used_q, seqused_k=used_k,
                             causal=causal, backend="fa3lite")
torch.cuda.synchronize()
print("nan rows:", int(torch.isnan(out).any(-1).any(-1).sum()))
