"""fa3lite: FlashAttention-3-class attention for NVIDIA Hopper, compiled at run time with NVRTC."""
__version__ = "0.1.0"
