"""Bridge between torch tensors and numba-cuda kernels: device checks, array views, launches.

Two execution modes, fixed when numba is first imported:

* GPU (default): tensors must be torch CUDA tensors; kernels see them through
  ``numba.cuda.as_cuda_array`` (no copy) and run on torch's current stream of the tensors' device.
* Simulator (``NUMBA_ENABLE_CUDASIM=1`` set before the first ``import numba``): tensors must be
  torch CPU tensors; kernels get them as numpy arrays (the simulator copies them in and back out)
  and run in numba's CPU simulator. Kernels cannot read or write bf16 storage there (no bf16, no
  libdevice); the reference still takes bf16 because it upcasts on the torch side first.

Kernels never receive torch bf16 directly (numba cannot type it): bf16 tensors travel as int16 views
and kernels convert the bits themselves (see ``_dtypes``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numba
import numba.cuda as ncuda
import numpy as np
import torch
from numba.core.errors import NumbaPerformanceWarning

from . import _compat  # noqa: F401  (before any kernel compiles)

SIMULATOR: bool = bool(numba.config.ENABLE_CUDASIM)
"""True when numba runs kernels in its CPU simulator (``NUMBA_ENABLE_CUDASIM=1`` at import)."""
if SIMULATOR:
    _compat.lock_simulator_shared_arrays()

_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)

# The simulator's launches run at Python's default GIL switch interval. A much shorter one (1e-5 s)
# made simulated launches ~4x faster, but it also let the simulator's own thread bookkeeping race:
# on 2 busy cores (2026-11-22) 3 of 700 reference backward runs came back wrong at 1e-5 s, 0 of 954
# at the default interval (same problem, two processes at once).


def check_tensor(name: str, t: object, ndim: int, dtypes: Sequence[torch.dtype] = _FLOAT_DTYPES) -> None:
    """Raise a clear error unless ``t`` is a torch tensor of ``ndim`` dims, a dtype in ``dtypes`` and
    on the device kind this mode runs on (CUDA on a GPU, CPU in the simulator)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.dim() != ndim:
        raise ValueError(f"{name}: expected a {ndim}-D tensor, got shape {tuple(t.shape)}")
    if t.dtype not in dtypes:
        names = ", ".join(str(d) for d in dtypes)
        raise TypeError(f"{name}: expected dtype in ({names}), got {t.dtype}")
    if SIMULATOR:
        if t.device.type != "cpu":
            raise ValueError(
                f"{name}: the numba CUDA simulator is on (NUMBA_ENABLE_CUDASIM=1), so a CPU tensor "
                f"is expected, got device {t.device}"
            )
    elif t.device.type != "cuda":
        raise ValueError(
            f"{name}: expected a CUDA tensor (set NUMBA_ENABLE_CUDASIM=1 before importing numba to "
            f"run on CPU tensors in the simulator), got device {t.device}"
        )


def check_same_device(named: dict[str, torch.Tensor]) -> torch.device:
    """Raise unless all tensors share one device; return it."""
    items = list(named.items())
    first_name, first = items[0]
    for name, t in items[1:]:
        if t.device != first.device:
            raise ValueError(f"{name}: expected device {first.device} (that of {first_name}), got {t.device}")
    return first.device


def check_no_bf16_in_simulator(name: str, dtype: torch.dtype) -> None:
    """Kernels that read or write bf16 bits need libdevice, which the simulator lacks."""
    if SIMULATOR and dtype == torch.bfloat16:
        raise TypeError(f"{name}: bfloat16 is not supported in the numba CUDA simulator (use fp16 or fp32)")


def kernel_view(t: torch.Tensor):
    """An array the kernel can index: a numba device array (GPU, no copy, strides kept) or a numpy
    array (simulator). bf16 becomes an int16 view of the same bytes.

    The simulator copies numpy arguments in and back out and cannot take strided ones, so there a
    strided tensor is passed as a contiguous copy: fine for inputs; outputs go through
    ``writable_target``.
    """
    t = t.detach()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    if SIMULATOR:
        return t.numpy() if t.is_contiguous() else np.ascontiguousarray(t.numpy())
    return ncuda.as_cuda_array(t, sync=False)


def writable_target(t: torch.Tensor) -> torch.Tensor:
    """The tensor a kernel should write for result ``t``: ``t`` itself, or in the simulator a
    contiguous stand-in when ``t`` is strided (hand it back with ``commit``)."""
    if SIMULATOR and not t.is_contiguous():
        return torch.empty(t.shape, dtype=t.dtype, device=t.device)
    return t


def commit(t: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Copy a ``writable_target`` stand-in back into ``t``; return ``t``."""
    if target is not t:
        t.copy_(target)
    return t


def scalar_f32(x: float) -> np.float32:
    """Kernel scalar arguments must be float32 so kernels do not compute in float64."""
    return np.float32(x)


def launch(kernel, grid: tuple[int, ...], block: int, device: torch.device, *args) -> None:
    """Launch ``kernel[grid, block]`` on torch's current stream of ``device`` (GPU) or in the simulator.

    A grid with a zero extent launches nothing (CUDA rejects it; there is no work).
    """
    if any(g == 0 for g in grid):
        return
    with warnings.catch_warnings():
        # Small test grids trip numba's under-utilisation warning; it says nothing about correctness.
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        if SIMULATOR:
            kernel[grid, block](*args)
            return
        with ncuda.gpus[device.index if device.index is not None else torch.cuda.current_device()]:
            stream = ncuda.external_stream(torch.cuda.current_stream(device).cuda_stream)
            kernel[grid, block, stream](*args)
