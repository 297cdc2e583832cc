// Event times per CTA (forward: per tile) for tools/trace_probe.py, which builds the kernels with
// FA3LITE_TRACE and reads the table back from the module's global `fa3lite_trace`. Without that
// define every call below compiles to nothing, so the kernels users run carry no trace code.
//
// A unit (CTA or tile) owns kEvents 64-bit slots: slot 0 holds the SM id (low 32 bits) and a count
// of the unit's blocks (high 32 bits); the other slots hold %globaltimer readings (ns) of the events
// the kernel marks (the tool names them).
#pragma once
#include "../ptx/types.cuh"

namespace fa3lite { namespace trace {
constexpr int kEvents = 8;
constexpr unsigned kUnits = 1u << 17;   // units past this are not recorded
}}  // namespace fa3lite::trace

#ifdef FA3LITE_TRACE
extern "C" {
__device__ fa3lite::u64 fa3lite_trace[fa3lite::trace::kUnits * fa3lite::trace::kEvents];
}
#endif

namespace fa3lite { namespace trace {

// %globaltimer: the GPU's nanosecond clock, one time base for all SMs.
__device__ __forceinline__ void mark(unsigned unit, int event) {
#ifdef FA3LITE_TRACE
  if (unit < kUnits) {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    fa3lite_trace[unit * kEvents + event] = t;
  }
#endif
}

// Slot 0: the SM this unit ran on and how many blocks (query or key blocks) it walked.
__device__ __forceinline__ void place(unsigned unit, int blocks) {
#ifdef FA3LITE_TRACE
  if (unit < kUnits) {
    u32 sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    fa3lite_trace[unit * kEvents] = (static_cast<u64>(static_cast<u32>(blocks)) << 32) | sm;
  }
#endif
}

}}  // namespace fa3lite::trace
