"""Thin helpers over the CUDA driver: error checks, and each device's primary context made current
for exactly the driver calls that need it.

torch, cuda.core and numba share one primary context per device. fa3lite's driver calls (module
loads, tensor-map encodes, launches) need the context of the tensors' device current on the calling
thread -- which may be any thread (a data-loader worker, a serving pool, autograd's backward thread)
and may have another device's context current, or a context another library pushed. ``on_device``
makes the right one current and restores whatever was current before, so the caller's current device
(``torch.cuda.current_device()``) never changes.
"""
from __future__ import annotations

import threading


class CudaDriverError(RuntimeError):
    pass


def check(result):
    """Unwrap a cuda.bindings (err, *values) tuple, raising on any error (the code's number is kept)."""
    from . import cdriver

    err, *rest = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise CudaDriverError(f"CUDA driver error {cdriver.describe(int(err))}")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else tuple(rest)


_ctx_lock = threading.Lock()
_primary: dict[int, int] = {}   # device index -> primary context handle (retained for the process)


def primary_context(device_index: int) -> int:
    """The device's primary context (the one torch uses), retained once per process."""
    ctx = _primary.get(device_index)
    if ctx is None:
        from . import cdriver

        with _ctx_lock:
            ctx = _primary.get(device_index)
            if ctx is None:
                ctx = cdriver.primary_context(device_index)
                _primary[device_index] = ctx
    return ctx


class on_device:  # noqa: N801 - used like a function: ``with on_device(index): ...``
    """Context manager: the device's primary context is current inside; whatever was current before
    (nothing, another device's context, another library's context) is current again after.

    Costs one cuCtxGetCurrent when the right context is already current, plus a push and a pop when
    it is not.
    """

    __slots__ = ("_ctx", "_pushed")

    def __init__(self, device_index: int):
        self._ctx = primary_context(device_index)
        self._pushed = False

    def __enter__(self) -> None:
        from . import cdriver

        if cdriver.current_context() != self._ctx:
            cdriver.push_context(self._ctx)
            self._pushed = True

    def __exit__(self, *exc_info) -> None:
        if self._pushed:
            from . import cdriver

            self._pushed = False
            cdriver.pop_context()
