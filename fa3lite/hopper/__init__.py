"""Host side of the Hopper kernels, one module per kernel family:

    common   what the families share (dtype names, limits, the debug-build switch)
    fwd      the forward kernel: variant and grid choice, launch plans (tensor maps, parameters)
    bwd      the backward's preprocess, main and postprocess kernels
    varlen   forward and backward on packed variable-length sequences (the fwd/bwd kernels' varlen
             variants), and the split-KV / paged decode launches of the forward
    combine  the split-KV combine kernel (merges the splits' partial O and LSE)
    append   the KV-cache append kernel (new K/V rows written into a cache in place)
    splits   how many CTAs share one query tile's keys when the caller leaves it to us

fa3lite.ops calls the entry points re-exported here. A new kernel family (a KV-cache forward, a
split-KV combine) is one new module beside these, importing common, not its siblings.
"""
from .append import append_plan
from .bwd import backward
from .fwd import forward, forward_bhsd, forward_plan
from .varlen import backward_varlen, forward_varlen, forward_varlen_plan, page_rows

__all__ = ["append_plan", "backward", "forward", "forward_bhsd", "forward_plan", "forward_varlen", "forward_varlen_plan",
           "backward_varlen", "page_rows"]
