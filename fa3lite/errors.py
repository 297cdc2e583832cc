"""The runtime's public exception and warning classes, kept apart from the runtime so that
`import fa3lite` can export them without loading the compiler, the driver or the disk cache."""
from __future__ import annotations


class KernelUnavailable(RuntimeError):
    """A kernel could not be made ready on a device (NVRTC compile error, module load error on an
    old driver, a missing optional import, ...). The message names the kernel, the device and the
    cause; ``kernel`` names the kernel variant and device alone. The failure is remembered, so later
    calls for the same kernel fail at once instead of compiling again."""

    def __init__(self, kernel: str, cause: str):
        super().__init__(f"{kernel}: {cause}")
        self.kernel = kernel
        self.cause = cause


class CacheWarning(UserWarning):
    """The disk cache refused something (an entry or directory others could write, a bad setting)."""
