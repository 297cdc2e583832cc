"""Thin helpers over cuda.bindings.driver: error checks and the right context on every thread."""
from __future__ import annotations

import threading


class CudaDriverError(RuntimeError):
    pass


def check(result):
    """Unwrap a cuda.bindings (err, *values) tuple, raising on any error."""
    from cuda.bindings import driver

    err, *rest = result if isinstance(result, tuple) else (result,)
    if err != driver.CUresult.CUDA_SUCCESS:
        _, name = driver.cuGetErrorName(err)
        _, desc = driver.cuGetErrorString(err)
        raise CudaDriverError(f"CUDA driver error {name.decode() if name else err}: "
                              f"{desc.decode() if desc else ''}")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else tuple(rest)


_ctx_lock = threading.Lock()
_primary: dict[int, int] = {}   # device index -> primary context handle


def make_current(device_index: int) -> None:
    """Make the device's primary context (the one torch uses) current on this thread.

    Autograd may run backward on a thread where no context was ever made current; driver calls
    there would fail or hit the wrong device without this.
    """
    from . import cdriver

    ctx = _primary.get(device_index)
    if ctx is None:
        from cuda.bindings import driver

        with _ctx_lock:
            ctx = _primary.get(device_index)
            if ctx is None:
                check(driver.cuInit(0))
                dev = check(driver.cuDeviceGet(device_index))
                ctx = int(check(driver.cuDevicePrimaryCtxRetain(dev)))
                _primary[device_index] = ctx
    if cdriver.current_context() != ctx:
        cdriver.set_context(ctx)
