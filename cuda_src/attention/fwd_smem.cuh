// Shared-memory plan of the forward kernel. Every tile starts on a 1024-byte boundary so the
// 128-byte swizzle pattern of TMA and of the wgmma descriptors line up (descriptor base offset 0).
//   sQ            kBlockM x D   (reused as sO by the epilogue: each warpgroup only ever touches its
//                                own 64 rows, so its O never overwrites Q rows the other still reads)
//   sK[kStages]   kBlockN x D
//   sV[kStages]   kBlockN x D
//   mbarriers     q_full, k_full/k_empty[kStages], v_full/v_empty[kStages]
// Each tile is stored as [D/64 column block][row][64 columns], 128 bytes per row.
#pragma once
#include "config.cuh"

namespace fa3lite { namespace attn {

constexpr int kSmemAlign = 1024;

struct FwdSmem {
  static constexpr u32 kQ = 0;
  static constexpr u32 kK = kQ + kQTileBytes;
  static constexpr u32 kV = kK + kStages * kKVTileBytes;
  static constexpr u32 kBarriers = kV + kStages * kKVTileBytes;
  static constexpr u32 kNumBarriers = 1 + 4 * kStages;
  static constexpr u32 kBytes = kBarriers + 8 * kNumBarriers;
  // The host requests this much: the tiles, the barriers and slack to align the base to 1024.
  static constexpr u32 kDynamicBytes = kBytes + kSmemAlign;

  u32 base;  // shared-window address of the 1024-aligned start

  __device__ __forceinline__ u32 q() const { return base + kQ; }
  __device__ __forceinline__ u32 k(int s) const { return base + kK + s * kKVTileBytes; }
  __device__ __forceinline__ u32 v(int s) const { return base + kV + s * kKVTileBytes; }
  __device__ __forceinline__ u32 q_full() const { return base + kBarriers; }
  __device__ __forceinline__ u32 k_full(int s) const { return base + kBarriers + 8 * (1 + s); }
  __device__ __forceinline__ u32 k_empty(int s) const { return base + kBarriers + 8 * (1 + kStages + s); }
  __device__ __forceinline__ u32 v_full(int s) const { return base + kBarriers + 8 * (1 + 2 * kStages + s); }
  __device__ __forceinline__ u32 v_empty(int s) const { return base + kBarriers + 8 * (1 + 3 * kStages + s); }
};

static_assert(FwdSmem::kDynamicBytes <= 227 * 1024, "tiles exceed Hopper's 227 KB of shared memory per CTA");
static_assert(kQTileBytes % kSmemAlign == 0 && kKVTileBytes % kSmemAlign == 0, "tiles must keep 1024-byte alignment");

}}  // namespace fa3lite::attn
