"""Debug builds (FA3LITE_DEBUG=1): the report a bounded wait leaves when it gives up.

A debug kernel's waits (mbarrier phases, the backward's dQ turns and claims) give up after a bounded
spin (cuda_src/ptx/debug.cuh): the thread stores a 16-byte report into host memory mapped for the
device, then traps. The trap surfaces as "unspecified launch failure" and ends the CUDA context --
every later call fails -- but host memory stays readable, so ``report()`` can say which kernel
variant, block, thread and wait gave up. ``attach`` points each debug module at the report when it
is loaded; the report is printed to stderr at exit (and tests/conftest.py adds it to a failing
test's output).

Report words (little-endian u32): module number (0: nothing reported), kind | detail << 4 | thread << 8,
value, linear block index.
"""
from __future__ import annotations

import atexit
import ctypes
import struct
import sys
import threading

from .driver import check, on_device

REPORT_BYTES = 16
# debug.cuh's Wait kinds: how to name the awaited thing from the report's value and detail.
_KINDS = {
    1: lambda value, detail: f"mbarrier wait (barrier at shared 0x{value:x}, phase parity {detail})",
    2: lambda value, detail: f"deterministic dQ turn (awaited turn {value})",
    3: lambda value, detail: f"dQ claim (first tile of the query block not stored; claim word 0x{value:x})",
}

_lock = threading.Lock()
_host: int = 0                      # the mapped host buffer (0: not allocated yet)
_device_ptr: dict[int, int] = {}    # device index -> the buffer's device address
_modules: list[str] = [""]          # module number -> what was loaded (0 means none)


def _buffer(device_index: int) -> int:
    """The report buffer's device address on ``device_index`` (allocated and zeroed on first use)."""
    global _host
    from cuda.bindings import driver

    with _lock:
        ptr = _device_ptr.get(device_index)
        if ptr is not None:
            return ptr
        with on_device(device_index):
            if not _host:
                flags = driver.CU_MEMHOSTALLOC_PORTABLE | driver.CU_MEMHOSTALLOC_DEVICEMAP
                _host = int(check(driver.cuMemHostAlloc(REPORT_BYTES, flags)))
                ctypes.memset(_host, 0, REPORT_BYTES)
                atexit.register(_print_at_exit)
            ptr = int(check(driver.cuMemHostGetDevicePointer(_host, 0)))
        _device_ptr[device_index] = ptr
        return ptr


def attach(module, description: str, device_index: int) -> None:
    """Point a loaded debug module (a CUmodule) at the report buffer and give it a number, so that a
    wait giving up in it can be traced to ``description``. Call with nothing else running on the
    device's context (at load time): it copies two globals synchronously. A module without the
    globals (a debug build with no bounded wait in it) is left as it is."""
    from cuda.bindings import driver

    with on_device(device_index):
        err, *_ = driver.cuModuleGetGlobal(module, b"fa3lite_debug_report")
    if err == driver.CUresult.CUDA_ERROR_NOT_FOUND:
        return
    ptr = _buffer(device_index)
    with _lock:
        _modules.append(description)
        number = len(_modules) - 1
    with on_device(device_index):
        for name, value in ((b"fa3lite_debug_report", struct.pack("<Q", ptr)),
                            (b"fa3lite_debug_module", struct.pack("<I", number))):
            address, size = check(driver.cuModuleGetGlobal(module, name))
            if size != len(value):
                raise RuntimeError(f"fa3lite: {name.decode()} is {size} bytes in {description}, expected {len(value)}")
            check(driver.cuMemcpyHtoD(address, value, len(value)))


def decode(words: bytes, modules: list[str]) -> str | None:
    """The message for a 16-byte report (None when nothing was reported)."""
    module, packed, value, block = struct.unpack("<4I", words)
    if module == 0:
        return None
    what = modules[module] if module < len(modules) else f"module #{module} (not loaded by this process)"
    kind, detail, thread = packed & 0xF, (packed >> 4) & 0xF, packed >> 8
    awaited = _KINDS[kind](value, detail) if kind in _KINDS else f"unknown wait kind {kind} (value {value})"
    return (f"fa3lite debug build: a bounded wait gave up and trapped (a deadlock in the kernel): {what}, "
            f"block {block} (linear index), thread {thread}: {awaited}")


def report() -> str | None:
    """What the last debug-build wait that gave up reported, or None (none did, or no debug kernel
    was loaded). Readable after the trap has ended the CUDA context."""
    if not _host:
        return None
    return decode(ctypes.string_at(_host, REPORT_BYTES), _modules)


def _print_at_exit() -> None:
    message = report()
    if message:
        print(message, file=sys.stderr)
