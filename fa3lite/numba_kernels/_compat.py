"""Workarounds for two numba-cuda 0.30.x problems; import before the first kernel compile or launch.

1. numpy >= 2.5: numba-cuda 0.30.4 registers an overload for ``np.row_stack`` while it builds its
   typing context (at the first kernel compile, not at import); numpy 2.5 removed that alias of
   ``np.vstack``, so every compile then fails with "module 'numpy' has no attribute 'row_stack'"
   (seen on the GPU image: numpy 2.5.2, numba-cuda 0.30.4). The alias is restored where missing.

2. The CUDA simulator's shared arrays: ``FakeCUDAShared.array`` looks up a block's array by the
   calling line and creates it when absent, with no lock. Simulated threads are Python threads, so two
   of them can both find it absent and each get its own "shared" array, and a wrong result. The same
   lookup, keyed the same way (caller's file and line), is done here under a lock. (It was found
   chasing rare wrong reference gradients in the simulator; the lock alone did not remove those, the
   default GIL switch interval did: see _backend.py.)
"""

import sys
import threading

import numpy as np

if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack


def lock_simulator_shared_arrays() -> None:
    """Make the simulator's shared-array allocation atomic (idempotent; simulator only)."""
    from numba.cuda.simulator import kernelapi
    from numba.core import types
    from numba.np import numpy_support

    cls = kernelapi.FakeCUDAShared
    if getattr(cls, "_fa3lite_locked", False):
        return
    upstream = cls.array
    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:   # dynamic shared memory / unsupported: no lookup
            return upstream(self, shape, dtype, alignment)
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        caller = sys._getframe(1)
        key = (caller.f_code.co_filename, caller.f_lineno)
        with lock:
            res = self._allocations.get(key)
            if res is None:
                res = np.empty(shape, dtype)
                self._allocations[key] = res
        return res

    cls.array = array
    cls._fa3lite_locked = True
