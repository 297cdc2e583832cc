// Event times per tile (backward: a key block and its query blocks; forward: a query tile) for
// tools/trace_probe.py, which builds the kernels with FA3LITE_TRACE and reads the table back from the
// module's global `fa3lite_trace`. Without that define every call below compiles to nothing, so the
// kernels users run carry no trace code.
//
// A unit (a tile) owns kEvents 64-bit slots: slot 0 holds the SM id (low 32 bits) and a count
// of the unit's blocks (high 32 bits); the other slots hold %globaltimer readings (ns) of the events
// the kernel marks (the tool names them).
#pragma once
#include "../ptx/mbarrier.cuh"
#include "../ptx/types.cuh"

namespace fa3lite { namespace trace {
constexpr int kEvents = 8;
constexpr unsigned kUnits = 1u << 17;   // units past this are not recorded
// Wait sites counted per CTA (wait below): per site, the waits made, those that found the phase still
// open, and the SM cycles those spent waiting. Lane 0 of each warp counts for its warp, in slots of
// its own (no two warps reduce into one address). A traced kernel still runs slower than the release
// build (forward 1.1-1.2x, backward ~1.5x: benchmarks/RESULTS.md section 32).
constexpr int kWaitSites = 3;
constexpr int kWaitSlots = 3;
constexpr int kWaitWarps = 16;                 // warps of a CTA (at most 512 threads)
constexpr unsigned kWaitUnits = 1u << 13;      // CTAs past this are not counted
}}  // namespace fa3lite::trace

#ifdef FA3LITE_TRACE
extern "C" {
__device__ fa3lite::u64 fa3lite_trace[fa3lite::trace::kUnits * fa3lite::trace::kEvents];
__device__ fa3lite::u64 fa3lite_waits[fa3lite::trace::kWaitUnits * fa3lite::trace::kWaitSites *
                                      fa3lite::trace::kWaitWarps * fa3lite::trace::kWaitSlots];
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

// mbar::wait, counted at `site` of `unit` (a CTA) in a traced build: whether the phase was still
// open when the thread got here (a non-blocking probe first) and for how many SM cycles it then
// waited. Tells a load that arrives late from a wait instruction that only queues behind other work.
__device__ __forceinline__ void wait(unsigned unit, int site, u32 bar, u32 parity) {
#ifdef FA3LITE_TRACE
  if (unit < kWaitUnits && threadIdx.x % 32 == 0) {
    u64* slot = &fa3lite_waits[((unit * kWaitSites + site) * kWaitWarps + threadIdx.x / 32) * kWaitSlots];
    atomicAdd(reinterpret_cast<unsigned long long*>(slot), 1ull);
    if (!mbar::test_wait(bar, parity)) {
      const long long t0 = clock64();
      mbar::wait(bar, parity);
      atomicAdd(reinterpret_cast<unsigned long long*>(slot + 1), 1ull);
      atomicAdd(reinterpret_cast<unsigned long long*>(slot + 2),
                static_cast<unsigned long long>(clock64() - t0));
    }
    return;
  }
#endif
  mbar::wait(bar, parity);
}

}}  // namespace fa3lite::trace
