"""Host cost of one kernel launch by the ways fa3lite could issue it (issue 10), interleaved.

    python3 tools/launch_ab.py

Launches the backward postprocess kernel on one query block (one row written) on torch's current
stream, 2,000 launches per sample, the ways alternating sample by sample, medians of 9 rounds, us per
launch:
  ctypes                      ctypes with argtypes, 11 arguments converted per call (fa3lite's path
                              until 2026-11-23)
  ctypes, no argtypes         a function object without argtypes, arguments pre-wrapped
  cuda.bindings               cuda.bindings.driver.cuLaunchKernel, CUfunction/CUstream made beforehand
  cdriver.launch              fa3lite's path now: cuda.bindings, the stream wrapped per call
  launch_current              fa3lite.runtime.launch.launch_current (error check included)
  torch.empty (4 KiB)         for scale: one allocation from torch's caching allocator
"""
from __future__ import annotations

import ctypes
import statistics
import time

import torch


def main() -> None:
    from fa3lite.hopper import bwd as hopper_bwd
    from fa3lite.runtime import cdriver, launch
    from cuda.bindings import driver as cu

    dev = torch.cuda.current_device()
    variant = hopper_bwd.BwdVariant(128, "bf16", False)
    kernel = launch.load(variant.postprocess_spec(), dev, 0)
    accum = torch.zeros(128 * 128, dtype=torch.float32, device="cuda")   # one query block of the accumulator
    dq = torch.empty(128 * 128, dtype=torch.bfloat16, device="cuda")
    params = hopper_bwd.POST_PARAMS.pack(dq_accum=accum.data_ptr(), dq=dq.data_ptr(), dq_visits=0, cu_seqlens_q=0,
                                         seqused_q=0, seqlen_q=1, num_heads=1, num_m_blocks=1, scale=1.0)
    block = launch.staging_view(len(params))
    block[:len(params)] = params
    argv = launch._staging.argv
    stream = launch.stream_handle(dev)
    typed = ctypes.CDLL("libcuda.so.1").cuLaunchKernel
    typed.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    typed.restype = ctypes.c_int
    raw = ctypes.CDLL("libcuda.so.1", use_errno=True).cuLaunchKernel
    raw.restype = ctypes.c_int
    f_arg, s_arg, argv_arg = ctypes.c_void_p(kernel.handle), ctypes.c_void_p(stream), ctypes.cast(argv, ctypes.c_void_p)
    one = ctypes.c_uint(1)
    cu_f, cu_s = cu.CUfunction(kernel.handle), cu.CUstream(stream)
    addr = launch._staging.argv_addr

    ways = {
        "ctypes": lambda: typed(kernel.handle, 1, 1, 1, 256, 1, 1, 0, stream, argv, None),
        "ctypes, no argtypes": lambda: raw(f_arg, one, one, one, 256, one, one, 0, s_arg, argv_arg, None),
        "cuda.bindings": lambda: cu.cuLaunchKernel(cu_f, 1, 1, 1, 256, 1, 1, 0, cu_s, addr, 0),
        "cdriver.launch": lambda: cdriver.launch(kernel.handle, (1, 1, 1), 256, 0, stream, addr),
        "launch_current": lambda: launch.launch_current(kernel, (1, 1, 1), 256, dev, stream),
        "torch.empty (4 KiB)": lambda: torch.empty(1024, device="cuda"),
    }
    for way in ways.values():
        for _ in range(100):
            way()
    torch.cuda.synchronize()
    samples = {name: [] for name in ways}
    for _ in range(9):
        for name, way in ways.items():
            t0 = time.perf_counter()
            for _ in range(2000):
                way()
            samples[name].append((time.perf_counter() - t0) / 2000 * 1e6)
            torch.cuda.synchronize()
    err = cu.cuLaunchKernel(cu_f, 1, 1, 1, 256, 1, 1, 0, cu_s, addr, 0)
    print(f"cuda.bindings launch returned {err}")
    for name, v in samples.items():
        print(f"{name:28s} {statistics.median(v):6.2f} us")


if __name__ == "__main__":
    main()
