"""Keep numba-cuda 0.30.x compiling under numpy >= 2.5.

numba-cuda 0.30.4 registers an overload for ``np.row_stack`` while it builds its typing context (at
the first kernel compile, not at import); numpy 2.5 removed that alias of ``np.vstack``, so every
compile then fails with "module 'numpy' has no attribute 'row_stack'" (seen on the GPU image:
numpy 2.5.2, numba-cuda 0.30.4). Restoring the alias, only where it is missing, is all it takes.
Import this module before the first numba-cuda compile.
"""

import numpy as np

if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack
