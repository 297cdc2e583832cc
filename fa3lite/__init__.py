"""fa3lite: FlashAttention-3-class attention for NVIDIA Hopper, compiled at run time with NVRTC.

Public names: flash_attn_func, flash_attn_varlen_func, flash_attn_with_kvcache,
scaled_dot_product_attention, kernel_info, InputError, FallbackWarning, KernelUnavailable, CacheWarning,
__version__. Importing fa3lite registers the custom ops torch.ops.fa3lite.fwd/bwd and varlen_fwd/varlen_bwd.
"""
from .api import flash_attn_func, flash_attn_varlen_func, scaled_dot_product_attention
from .checks import FallbackWarning, InputError
from .kvcache import flash_attn_with_kvcache
from .errors import CacheWarning, KernelUnavailable

__version__ = "0.1.0"

__all__ = ["flash_attn_func", "flash_attn_varlen_func", "flash_attn_with_kvcache", "scaled_dot_product_attention",
           "kernel_info", "InputError", "FallbackWarning", "KernelUnavailable", "CacheWarning", "__version__"]


def kernel_info(kind, **kwargs):
    """Compiled-kernel facts: kernel_info(kind, head_dim=..., dtype=..., causal=...) -> dict with
    registers, spill_bytes, smem_bytes, sass={opcode: count}, ... (see fa3lite.runtime.inspect).

    Imported on first call, so that `import fa3lite` never needs the CUDA toolchain.
    """
    from .runtime.inspect import kernel_info as _kernel_info

    return _kernel_info(kind, **kwargs)
