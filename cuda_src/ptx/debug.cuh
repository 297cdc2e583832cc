// Debug builds (FA3LITE_DEBUG) only: how a bounded wait gives up. It traps, so a lost arrival fails in
// seconds instead of hanging the GPU. The trap's error ("unspecified launch failure") names nothing
// and ends the CUDA context, so first the thread leaves a report where the host can still read it
// after that: in host memory mapped for the device. fa3lite/runtime/debug.py sets the two globals
// below when it loads a debug module, and decodes the report into which kernel variant, block, thread
// and wait (a device printf could say all but the kernel, and only to stdout).
#pragma once
#include "gmem.cuh"
#include "types.cuh"

#ifdef FA3LITE_DEBUG
extern "C" {
__device__ fa3lite::u32* fa3lite_debug_report = nullptr;   // 4 words of mapped host memory, or none
__device__ fa3lite::u32 fa3lite_debug_module = 0;          // the host's number for this module
}

namespace fa3lite { namespace debug {

// What was awaited (the report's kind; fa3lite/runtime/debug.py names them).
enum Wait : u32 { kMbarrier = 1, kDqTurn = 2, kDqClaim = 3 };

// End the kernel with an error (the host sees cudaErrorLaunchFailure). trap.
__device__ __forceinline__ void trap() { asm volatile("trap;" ::: "memory"); }

// Report the wait this thread gives up on, then trap. The report is one 16-byte store -- {module,
// kind | detail << 4 | thread << 8, value, linear block index} -- so when many threads give up at once
// the host reads one thread's whole report, never a mix. `value`: the mbarrier's shared address, the
// awaited dQ turn or the dQ claim word; `detail`: the awaited parity (4 bits).
__device__ __noinline__ void give_up(Wait kind, u32 value, u32 detail) {
  if (u32* r = fa3lite_debug_report) {
    const u32 block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    gmem::st_v4(r, uint4{fa3lite_debug_module, kind | (detail & 0xFu) << 4 | threadIdx.x << 8, value, block});
    gmem::fence_system();
  }
  trap();
}

}}  // namespace fa3lite::debug
#endif
