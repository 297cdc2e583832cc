"""Session 47: does a debug kernel's device printf reach stdout when the kernel then traps? Run with
PYTHONPATH at a tree whose mbar::wait prints before its trap (292f9f1, `_vo`) and this tree's
cuda_src/tests/ptx_tests.cu (ptx_test_mbar_stuck) copied into it."""
import sys
import time

import torch

from fa3lite.runtime import launch
from fa3lite.runtime.compile import KernelSpec
from fa3lite.runtime.params import ParamStruct

params = ParamStruct("MbarStuckParams", (("stuck_block", "i32"), ("stuck_thread", "i32")))
spec = KernelSpec("tests/ptx_tests.cu", "ptx_test_mbar_stuck",
                  (("FA3LITE_BUILD_ptx_test_mbar_stuck", "1"),) + params.layout_defines(), debug=True)
dev = torch.cuda.current_device()
loaded = launch.load(spec, dev, 0)
start = time.monotonic()
launch.launch(loaded, (3, 1, 1), 64, params.pack(stuck_block=2, stuck_thread=37), dev,
              torch.cuda.current_stream().cuda_stream)
try:
    torch.cuda.synchronize()
    print("no error")
except Exception as exc:  # noqa: BLE001
    print("error:", str(exc).splitlines()[0])
print(f"seconds: {time.monotonic() - start:.1f}", flush=True)
sys.stdout.flush()
