#!/usr/bin/env bash
# Side-by-side: an older tree extracted with `git archive <commit> cuda_src fa3lite tools | tar -x -C tools/experiments/old` vs the current tree, plus cuDNN, one machine.
export PYTHONUNBUFFERED=1
cat > /tmp/cudnn.py <<'PY'
import torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
for D, causal, S in ((128, False, 16384), (128, True, 16384), (128, False, 4096), (128, True, 4096), (128, False, 1024), (64, False, 16384), (256, False, 16384)):
    H, B = 2048 // D, 16384 // S
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        for _ in range(3): F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        torch.cuda.synchronize(); st, en = torch.cuda.Event(True), torch.cuda.Event(True); ts = []
        for _ in range(10):
            st.record(); F.scaled_dot_product_attention(q, k, v, is_causal=causal); en.record(); torch.cuda.synchronize(); ts.append(st.elapsed_time(en))
    ms = sorted(ts)[5]; fl = 4 * B * H * S * S * D / (2 if causal else 1)
    print(f"cudnn D={D} causal={causal} S={S}: {fl / ms / 1e9:.1f} TFLOP/s", flush=True)
PY
cat > /tmp/ours.py <<'PY'
import sys; sys.path.insert(0, "tools")
from fwd_smoke import bench
for D, causal, S in ((128, False, 16384), (128, True, 16384), (128, False, 4096), (128, True, 4096), (128, False, 1024), (64, False, 16384), (256, False, 16384)):
    bench(D, causal, S)
PY
for round in 1 2; do
  echo "== old (non-persistent)"; (cd tools/experiments/old && FA3LITE_CACHE_DIR=/tmp/c_old PYTHONPATH=$PWD timeout 100 python3 /tmp/ours.py)
  echo "== new (persistent)"; FA3LITE_CACHE_DIR=/tmp/c_new PYTHONPATH=$PWD timeout 100 python3 /tmp/ours.py
done
echo "== cudnn"; timeout 100 python3 /tmp/cudnn.py
