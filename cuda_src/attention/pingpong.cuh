// Pingpong (FA3's warp scheduler barrier): the consumer warpgroups take turns issuing their GEMMs, so
// while one warpgroup's GEMMs run on the tensor cores the others do their softmax, instead of all of
// them asking for the tensor cores at the same time and then all doing exp2 at the same time.
//
// One named barrier per warpgroup w, counting 256 threads: w's own 128 (bar.sync, it waits) and the
// 128 of the warpgroup before it in the round (bar.arrive, it passes the turn on). Warpgroup 0 gives
// itself the first turn. Every warpgroup of a CTA issues the same number of GEMM groups (the key
// range is the CTA's), so the last warpgroup's last turn is not passed on: no arrival is left
// pending on any barrier when the CTA exits.
#pragma once
#include "../ptx/sync.cuh"
#include "config.cuh"
#include "named_barriers.cuh"

namespace fa3lite { namespace attn {

struct Pingpong {
  int wg;   // consumer warpgroup index, 0 .. kConsumerWarpgroups - 1

  static constexpr u32 kTurnThreads = 2 * kWarpgroupThreads;
  static constexpr bool kOn = kPingpong && kConsumerWarpgroups > 1;

  __device__ __forceinline__ static u32 bar(int w) {
    return static_cast<u32>(NamedBarrier::kSchedulerWg0) + static_cast<u32>(w);
  }

  // Before the first wait: warpgroup 0 starts with the turn.
  __device__ __forceinline__ void start() const {
    if (kOn && wg == 0) named_barrier::arrive(bar(0), kTurnThreads);
  }

  // Wait for this warpgroup's turn to issue GEMMs.
  __device__ __forceinline__ void wait() const {
    if (kOn) named_barrier::sync(bar(wg), kTurnThreads);
  }

  // GEMMs issued: hand the turn to the next warpgroup (`last`: this was the final group of the tile).
  __device__ __forceinline__ void pass(bool last) const {
    if (kOn && !(last && wg == kConsumerWarpgroups - 1)) {
      named_barrier::arrive(bar((wg + 1) % kConsumerWarpgroups), kTurnThreads);
    }
  }
};

}}  // namespace fa3lite::attn
