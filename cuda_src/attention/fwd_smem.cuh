// Shared-memory plan of the forward kernel. Every tile starts on a 1024-byte boundary so the
// 128-byte swizzle pattern of TMA and of the wgmma descriptors line up (descriptor base offset 0).
//   sQ[kQStages]  kBlockM x D
//   sK[kStages]   kBlockN x D
//   sV[kStages]   kBlockN x D
//   sO            kBlockM x D, with kSeparateO only: the epilogue's staging buffer for the TMA store.
//                 Without it O is staged in sQ (each warpgroup only ever touches its own 64 rows, so
//                 its O never overwrites Q rows another warpgroup still reads), or with kDirectO not
//                 staged at all.
//   mbarriers     q_full/q_empty[kQStages], k_full/k_empty[kStages], v_full/v_empty[kStages]
// Each tile is stored as [D/64 column block][row][64 columns], 128 bytes per row.
#pragma once
#include "config.cuh"

namespace fa3lite { namespace attn {

constexpr int kSmemAlign = 1024;

struct FwdSmem {
  static constexpr u32 kQ = 0;
  static constexpr u32 kK = kQ + kQStages * kQTileBytes;
  static constexpr u32 kV = kK + kStages * kKVTileBytes;
  static constexpr u32 kO = kV + kStages * kKVTileBytes;
  static constexpr u32 kBarriers = kO + (kSeparateO ? kQTileBytes : 0);
  static constexpr u32 kNumBarriers = 2 * kQStages + 4 * kStages;
  static constexpr u32 kBytes = kBarriers + 8 * kNumBarriers;
  // The host requests this much: the tiles, the barriers and slack to align the base to 1024.
  static constexpr u32 kDynamicBytes = kBytes + kSmemAlign;

  u32 base;  // shared-window address of the 1024-aligned start

  __device__ __forceinline__ u32 q(int s) const { return base + kQ + s * kQTileBytes; }
  __device__ __forceinline__ u32 k(int s) const { return base + kK + s * kKVTileBytes; }
  __device__ __forceinline__ u32 v(int s) const { return base + kV + s * kKVTileBytes; }
  __device__ __forceinline__ u32 o() const { return base + (kSeparateO ? kO : kQ); }   // without sO: sQ (one)
  __device__ __forceinline__ u32 q_full(int s) const { return base + kBarriers + 8 * s; }
  __device__ __forceinline__ u32 q_empty(int s) const { return base + kBarriers + 8 * (kQStages + s); }
  __device__ __forceinline__ u32 k_full(int s) const { return base + kBarriers + 8 * (2 * kQStages + s); }
  __device__ __forceinline__ u32 k_empty(int s) const { return base + kBarriers + 8 * (2 * kQStages + kStages + s); }
  __device__ __forceinline__ u32 v_full(int s) const { return base + kBarriers + 8 * (2 * kQStages + 2 * kStages + s); }
  __device__ __forceinline__ u32 v_empty(int s) const {
    return base + kBarriers + 8 * (2 * kQStages + 3 * kStages + s);
  }
};

// Arrivals that free a Q buffer for a later tile's load: with sO or kDirectO, one per consumer warp
// once its last Q K^T wgmma completed; O staged in sQ, one per warpgroup once the TMA store has read
// its O rows out of sQ.
constexpr bool kQFreeAfterGemms = kSeparateO || kDirectO;
constexpr u32 kQEmptyArrivals = kQFreeAfterGemms ? kConsumerWarps : kConsumerWarpgroups;

static_assert(FwdSmem::kDynamicBytes <= 227 * 1024, "tiles exceed Hopper's 227 KB of shared memory per CTA");
#ifdef FA3LITE_SMEM_BYTES
static_assert(FwdSmem::kDynamicBytes == FA3LITE_SMEM_BYTES, "host and device disagree on the shared memory size");
#endif
static_assert(kQTileBytes % kSmemAlign == 0 && kKVTileBytes % kSmemAlign == 0, "tiles must keep 1024-byte alignment");

}}  // namespace fa3lite::attn
