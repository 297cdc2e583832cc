// mbarrier: 8-byte transaction barriers in shared memory. One PTX instruction per function.
// Addresses are 32-bit shared-window offsets (see smem_addr in sync.cuh).
#pragma once
#include "debug.cuh"
#include "types.cuh"

namespace fa3lite { namespace mbar {

// Set the expected arrival count of a fresh barrier; one thread, before any use.
__device__ __forceinline__ void init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}

// Make barrier initialisation visible to the async proxy (TMA) and the cluster; follow with a CTA barrier.
__device__ __forceinline__ void fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// Count one arrival (release semantics: prior writes of this thread are visible to waiters).
__device__ __forceinline__ void arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}

// Count one arrival and announce `bytes` of TMA traffic that must land before the phase completes.
__device__ __forceinline__ void arrive_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}

// One probe of phase `parity`: true once the phase with that parity has completed. May suspend
// the thread for a hardware-chosen time before answering false, so it is always used in a loop.
__device__ __forceinline__ bool try_wait(u32 bar, u32 parity) {
  u32 ok;
  asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
               "selp.u32 %0, 1, 0, p; }" : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
  return ok != 0;
}

// Non-blocking probe of phase `parity`: true if it has completed now (never suspends the thread).
__device__ __forceinline__ bool test_wait(u32 bar, u32 parity) {
  u32 ok;
  asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
               "selp.u32 %0, 1, 0, p; }" : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
  return ok != 0;
}

// Block until phase `parity` completed. With FA3LITE_DEBUG a wait that spins too long gives up
// (debug.cuh: a report for the host, then a trap), so a protocol bug (a missing arrive, a wrong byte
// count) fails in seconds instead of hanging the GPU.
__device__ __forceinline__ void wait(u32 bar, u32 parity) {
#ifdef FA3LITE_DEBUG
  for (u32 spins = 0; !try_wait(bar, parity); ++spins) {
    if (spins == FA3LITE_DEBUG_SPINS) debug::give_up(debug::kMbarrier, bar, parity);
  }
#else
  while (!try_wait(bar, parity)) {}
#endif
}

}}  // namespace fa3lite::mbar
