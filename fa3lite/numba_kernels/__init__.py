"""numba-cuda kernels: the reference attention (oracle) and the backward's auxiliary kernels.

``reference``: attention_forward / attention_backward, fp32, never storing Sq x Sk.
``aux``: dot_do_o, convert_dq, reduce_gqa.
``kvcache``: kvcache_attention, the oracle of flash_attn_with_kvcache (contiguous or paged caches).
Submodules are imported on demand so that importing fa3lite does not import numba.
"""
