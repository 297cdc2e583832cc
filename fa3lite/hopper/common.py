"""What the Hopper kernel families' host modules share: dtype names, limits, the debug-build switch,
a tensor's device index, the device's L2 size, packed pointers."""
from __future__ import annotations

import functools
import os
import struct

import torch

DTYPE_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16"}
LOG2E = 1.4426950408889634
MAX_GRID_X = (1 << 31) - 1     # blockIdx.x limit: every kernel flattens its grid into x
# Mask offsets are clamped to +-OFFSET_LIMIT: exact while Sq, Sk < 2^30 (a key-query distance never
# reaches it), and the kernels' sums of a row or key index and an offset stay inside i32.
OFFSET_LIMIT = 1 << 30
PTR = struct.Struct("<Q")      # a device address inside a packed parameter block
PLAN_LIMIT = 1024              # launch plans kept per family; past it a table starts over (plans are cheap)


def band(causal: bool, causal_offset: int, local_offset: int | None) -> tuple[bool, int, int]:
    """The mask as the kernels take it: (banded variant, causal_offset, local_offset), key j visible to
    query i iff i + local_offset <= j <= i + causal_offset in a banded variant. Host form: causal (an
    upper edge at causal_offset) and local_offset (a window's lower edge, or None). A window without
    an upper edge runs the banded variant with an upper edge no key reaches."""
    def clamp(x):
        return max(min(int(x), OFFSET_LIMIT), -OFFSET_LIMIT)

    if local_offset is None:
        return bool(causal), clamp(causal_offset) if causal else 0, -OFFSET_LIMIT
    return True, clamp(causal_offset) if causal else OFFSET_LIMIT, clamp(local_offset)


def score_scales(softmax_scale: float, softcap: float) -> dict:
    """The kernels' scale_log2 and softcap_scale parameters: without softcap the exponent takes
    softmax_scale * log2(e); with it the tanh takes softmax_scale / softcap and the exponent
    softcap * log2(e) (cuda_src/attention/mask.cuh, bwd_softmax.cuh)."""
    if softcap > 0:
        return {"scale_log2": softcap * LOG2E, "softcap_scale": softmax_scale / softcap}
    return {"scale_log2": softmax_scale * LOG2E, "softcap_scale": 0.0}


def debug_build() -> bool:
    """FA3LITE_DEBUG=1 selects kernels whose mbarrier (and semaphore) waits trap after a bounded spin."""
    return os.environ.get("FA3LITE_DEBUG", "0") not in ("", "0")


def device_index(t: torch.Tensor) -> int:
    """The CUDA device index of a tensor (its device always names one)."""
    return t.device.index if t.device.index is not None else torch.cuda.current_device()


L2_FALLBACK_BYTES = 50 * 2**20   # an H100's L2, where torch reports no size


@functools.cache
def l2_bytes(device) -> int:
    """The L2 cache size in bytes of a CUDA device (index or torch.device)."""
    props = torch.cuda.get_device_properties(device)
    return int(getattr(props, "L2_cache_size", 0) or L2_FALLBACK_BYTES)


def lpt_group(bytes_per_head: int, heads: int, device) -> int:
    """Heads per group of a longest-first launch order (the forward's and the backward's schedulers):
    the largest power of two whose rows that every CTA of a head reads take at most half of L2, so
    that the group's CTAs, which run side by side, mostly hit in L2; all ``heads`` if fewer."""
    fit = max(1, l2_bytes(device) // 2 // max(bytes_per_head, 1))
    return min(1 << (fit.bit_length() - 1), heads)


@functools.cache
def sm_count(device_index: int) -> int:
    """The streaming multiprocessors of a CUDA device: persistent grids and the turn order size to it."""
    return torch.cuda.get_device_properties(device_index).multi_processor_count
