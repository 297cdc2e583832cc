"""Three calls of the bench's varlen forward (d, causal from argv) for ncu to pick one."""
import sys
import torch
from fa3lite import flash_attn_varlen_func

LENGTHS = (3970, 2089, 3616, 2234, 677, 1572, 2226)
d, causal = int(sys.argv[1]), sys.argv[2] == "1"
cu = torch.tensor((0,) + LENGTHS, dtype=torch.int64).cumsum(0).to("cuda", torch.int32)
q, k, v = (torch.randn(sum(LENGTHS), 2048 // d, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
for _ in range(3):
    flash_attn_varlen_func(q, k, v, cu, cu, max(LENGTHS), max(LENGTHS), causal=causal)
torch.cuda.synchronize()
