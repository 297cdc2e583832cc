"""Run-time layer: NVRTC compilation of cuda_src/, the kernel cache, TMA descriptors and launches."""
