// Pingpong (FA3's warp scheduler barrier): the consumer warpgroups take turns issuing their GEMMs, so
// while one warpgroup's GEMMs run on the tensor cores the others do their softmax, instead of all of
// them asking for the tensor cores at the same time and then all doing exp2 at the same time.
//
// One named barrier per warpgroup w, counting 256 threads: w's own 128 (bar.sync, it waits) and the
// 128 of the warpgroup before it in the round (bar.arrive, it passes the turn on). The round runs
// through the CTA's tiles unbroken: warpgroup 0 gives itself the first turn once, when the CTA starts,
// and each later turn of it -- the first of a tile included -- is passed on by the last warpgroup. So
// no warpgroup begins its next tile's GEMMs before every other has waited its last turn of this one:
// a warpgroup two passes ahead of a barrier's waiter would complete it alone, and the turns would hang.
// At the CTA's end warpgroup 0 takes the last pass (finish), so no arrival is left pending on a
// barrier when the CTA exits.
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

  // Once per CTA, before the first wait: warpgroup 0 starts with the turn.
  __device__ __forceinline__ void start() const {
    if (kOn && wg == 0) named_barrier::arrive(bar(0), kTurnThreads);
  }

  // Wait for this warpgroup's turn to issue GEMMs.
  __device__ __forceinline__ void wait() const {
    if (kOn) named_barrier::sync(bar(wg), kTurnThreads);
  }

  // GEMMs issued: hand the turn to the next warpgroup.
  __device__ __forceinline__ void pass() const {
    if (kOn) named_barrier::arrive(bar((wg + 1) % kConsumerWarpgroups), kTurnThreads);
  }

  // Once per CTA, after its last tile: warpgroup 0 takes the turn the last warpgroup passed on (or,
  // with no turn taken, the one it gave itself), which leaves no barrier with a pending arrival.
  __device__ __forceinline__ void finish() const {
    if (kOn && wg == 0) named_barrier::sync(bar(0), kTurnThreads);
  }
};

}}  // namespace fa3lite::attn
