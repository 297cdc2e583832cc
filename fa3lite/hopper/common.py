"""What the Hopper kernel families' host modules share: dtype names, limits, the debug-build switch,
a tensor's device index, packed pointers."""
from __future__ import annotations

import os
import struct

import torch

DTYPE_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16"}
LOG2E = 1.4426950408889634
MAX_GRID_X = (1 << 31) - 1     # blockIdx.x limit: every kernel flattens its grid into x
I32_MAX = (1 << 31) - 1        # offsets the kernels take as i32 are clamped to +-I32_MAX
PTR = struct.Struct("<Q")      # a device address inside a packed parameter block
PLAN_LIMIT = 1024              # launch plans kept per family; past it a table starts over (plans are cheap)


def debug_build() -> bool:
    """FA3LITE_DEBUG=1 selects kernels whose mbarrier (and semaphore) waits trap after a bounded spin."""
    return os.environ.get("FA3LITE_DEBUG", "0") not in ("", "0")


def device_index(t: torch.Tensor) -> int:
    """The CUDA device index of a tensor (its device always names one)."""
    return t.device.index if t.device.index is not None else torch.cuda.current_device()
