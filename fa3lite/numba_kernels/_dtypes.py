"""Element conversions between stored dtypes and fp32 inside numba-cuda kernels.

fp32 and fp16 arrays are typed natively by numba. bf16 tensors reach kernels as int16 views of the
same bytes (numba cannot type torch bf16), so their conversions work on the bits: bf16 -> fp32 is the
16 bits shifted into the top of an fp32; fp32 -> bf16 rounds to nearest even, as torch does. The bf16
paths use libdevice bit casts, which exist on the GPU only (not in numba's simulator).
"""

from __future__ import annotations

import functools

import numba.cuda as ncuda
import numpy as np
import torch

_BF16_SHIFT = 16  # bf16 is the top half of an fp32
_LOW16 = 0xFFFF
_ROUND_HALF = 0x7FFF  # with the kept lsb added: round to nearest, ties to even
_BF16_QUIET_NAN = 0x7FC0


@functools.lru_cache(maxsize=None)
def loader(dtype: torch.dtype):
    """Device function: stored element of ``dtype`` -> float32."""
    if dtype == torch.bfloat16:
        from numba.cuda import libdevice

        @ncuda.jit(device=True)
        def load_bf16(x):
            return libdevice.int_as_float(np.int32((np.int32(x) & _LOW16) << _BF16_SHIFT))

        return load_bf16

    @ncuda.jit(device=True)
    def load_native(x):
        return np.float32(x)

    return load_native


@functools.lru_cache(maxsize=None)
def storer(dtype: torch.dtype):
    """Device function: float32 -> the element to store in an array of ``dtype`` (int16 bits for bf16)."""
    if dtype == torch.bfloat16:
        from numba.cuda import libdevice

        @ncuda.jit(device=True)
        def store_bf16(v):
            if v != v:
                return np.int16(_BF16_QUIET_NAN)
            u = np.int64(libdevice.float_as_int(v))
            rounded = (u + _ROUND_HALF + ((u >> _BF16_SHIFT) & 1)) >> _BF16_SHIFT
            return np.int16(rounded & _LOW16)

        return store_bf16
    if dtype == torch.float16:

        @ncuda.jit(device=True)
        def store_f16(v):
            return np.float16(v)

        return store_f16
    if dtype == torch.float32:

        @ncuda.jit(device=True)
        def store_f32(v):
            return np.float32(v)

        return store_f32
    raise TypeError(f"dtype: expected torch.float16, torch.bfloat16 or torch.float32, got {dtype}")
