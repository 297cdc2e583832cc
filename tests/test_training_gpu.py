"""A small attention stack trains the same with fa3lite as with torch SDPA (within bf16 noise).

Three copies of one model (same init, same data) take 30 AdamW steps in bf16: attention through
torch's SDPA (the reference), through fa3lite.flash_attn_func and through
fa3lite.scaled_dot_product_attention. bf16 noise is measured, not assumed: a fourth copy uses torch's
math SDPA backend, and the fa3lite curves must stay as close to the reference as 3x that copy's
distance (with a floor of 1% of the starting loss), and the loss must actually fall.
"""
import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import fa3lite

pytestmark = pytest.mark.gpu
if not (torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)):
    pytest.skip("needs a Hopper (sm_90) GPU", allow_module_level=True)

WIDTH, HEADS, KV_HEADS, LAYERS, SEQ, BATCH, STEPS = 256, 4, 2, 2, 384, 4, 30
HEAD_DIM = WIDTH // HEADS


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(WIDTH)
        self.q = torch.nn.Linear(WIDTH, WIDTH)
        self.kv = torch.nn.Linear(WIDTH, 2 * KV_HEADS * HEAD_DIM)
        self.out = torch.nn.Linear(WIDTH, WIDTH)

    def forward(self, x, attend):
        b, s, _ = x.shape
        h = self.norm(x)
        q = self.q(h).view(b, s, HEADS, HEAD_DIM)
        k, v = self.kv(h).view(b, s, 2, KV_HEADS, HEAD_DIM).unbind(2)   # strided views, as in models
        return x + self.out(attend(q, k, v).reshape(b, s, WIDTH))


def sdpa_torch(q, k, v):
    o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                       is_causal=True, enable_gqa=True)
    return o.transpose(1, 2)


def sdpa_fa3lite(q, k, v):
    o = fa3lite.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                             is_causal=True, enable_gqa=True, backend="fa3lite")
    return o.transpose(1, 2)


def flash_fa3lite(q, k, v):
    return fa3lite.flash_attn_func(q, k, v, causal=True, backend="fa3lite")


def train(attend, backend=None):
    torch.manual_seed(0)
    blocks = torch.nn.ModuleList(Block() for _ in range(LAYERS)).cuda().to(torch.bfloat16)
    head = torch.nn.Linear(WIDTH, WIDTH).cuda().to(torch.bfloat16)
    params = list(blocks.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=3e-3)
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(BATCH, SEQ, WIDTH, device="cuda", dtype=torch.bfloat16, generator=gen)
    # target: a fixed causal mixing of the inputs, learnable only through attention
    y = torch.cumsum(x.float(), dim=1) / torch.arange(1, SEQ + 1, device="cuda")[None, :, None]
    losses = []
    for _ in range(STEPS):
        h = x
        for blk in blocks:
            if backend is None:
                h = blk(h, attend)
            else:
                with sdpa_kernel(backend):
                    h = blk(h, attend)
        loss = F.mse_loss(head(h).float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return torch.tensor(losses)


def test_loss_curves_match_torch_sdpa():
    ref = train(sdpa_torch)
    noise = (train(sdpa_torch, SDPBackend.MATH) - ref).abs().max().item()
    tol = max(3 * noise, 0.01 * ref[0].item())
    assert ref[-1] < 0.7 * ref[0], f"the model did not learn: {ref.tolist()}"
    for name, fn in (("flash_attn_func", flash_fa3lite), ("scaled_dot_product_attention", sdpa_fa3lite)):
        got = train(fn)
        assert torch.isfinite(got).all(), f"{name}: non-finite loss {got.tolist()}"
        gap = (got - ref).abs().max().item()
        assert gap <= tol, f"{name}: loss curve off by {gap:.4g} > {tol:.4g}\n{got.tolist()}\n{ref.tolist()}"
