// Shared-memory plan of the backward kernel. Tiles start on 1024-byte boundaries (the 128-byte
// swizzle atom), so TMA's swizzle and the wgmma descriptors agree with base offset 0.
//   sK, sV            kBlockN x D, loaded once
//   sQ[s], sdO[s]     kBlockM x D, the ring of query blocks
//   sdS[b]            dS^T, kBlockN key rows x kBlockM query columns (written with stmatrix);
//                     kDsBuffers of them: none in a narrow variant without dQ
//   sP[b]             wide with dK/dV only: P^T, like dS^T
//   sdQ[b]            narrow with dQ only: the f32 dQ tile(s) in fragment order, read by the bulk
//                     reduce; kDqBuffers of them, alternate query blocks
//   sLse[s], sDps[s]  kBlockM floats each: the query block's lse_log2 and dPsum, loaded with Q / dO
//   mbarriers         kv_full, kv_empty (the consumers no longer read sK/sV: a persistent CTA's next
//                     tile may load them), q_full[s], do_full[s], empty[s], sched_full[2],
//                     sched_empty[2] (the next tile's index, bwd_scheduler.cuh)
//   sched[2]          the next tile's index, from the producer to the other roles
// Tiles are [D/64 column block][row][64 columns], 128 bytes per row, 16-byte chunks XOR row % 8.
// A region a variant does not use has size 0 (the host mirror is BwdVariant.smem_bytes).
#pragma once
#include "bwd_config.cuh"

namespace fa3lite { namespace attn { namespace bwd {

constexpr int kSmemAlign = 1024;

struct BwdSmem {
  static constexpr u32 kK = 0;
  static constexpr u32 kV = kK + kKTileBytes;
  static constexpr u32 kQ = kV + kKTileBytes;
  static constexpr u32 kDO = kQ + kStages * kQTileBytes;
  static constexpr u32 kDS = kDO + kStages * kQTileBytes;
  static constexpr u32 kP = kDS + kDsBuffers * kDsTileBytes;
  static constexpr u32 kDQ = kP + kPBuffers * kDsTileBytes;
  static constexpr u32 kLse = kDQ + kDqBuffers * kDqRegions * kDqRegionBytes;
  static constexpr u32 kDps = kLse + kStages * kStatBytes;
  static constexpr u32 kBarriers = kDps + kStages * kStatBytes;
  static constexpr u32 kNumBarriers = 2 + 3 * kStages + 4;
  static constexpr u32 kSched = kBarriers + 8 * kNumBarriers;
  static constexpr u32 kBytes = kSched + 8;
  static constexpr u32 kDynamicBytes = kBytes + kSmemAlign;   // slack to align the base

  u32 base;  // shared-window address of the 1024-aligned start

  __device__ __forceinline__ u32 k() const { return base + kK; }
  __device__ __forceinline__ u32 v() const { return base + kV; }
  __device__ __forceinline__ u32 q(int s) const { return base + kQ + s * kQTileBytes; }
  __device__ __forceinline__ u32 dout(int s) const { return base + kDO + s * kQTileBytes; }
  __device__ __forceinline__ u32 ds(int b) const { return base + kDS + b * kDsTileBytes; }
  __device__ __forceinline__ u32 p(int b) const { return base + kP + b * kDsTileBytes; }
  __device__ __forceinline__ u32 dq(int buf, int region) const {
    return base + kDQ + (buf * kDqRegions + region) * kDqRegionBytes;
  }
  __device__ __forceinline__ u32 lse(int s) const { return base + kLse + s * kStatBytes; }
  __device__ __forceinline__ u32 dps(int s) const { return base + kDps + s * kStatBytes; }
  __device__ __forceinline__ u32 kv_full() const { return base + kBarriers; }
  __device__ __forceinline__ u32 kv_empty() const { return base + kBarriers + 8; }
  __device__ __forceinline__ u32 q_full(int s) const { return base + kBarriers + 8 * (2 + s); }
  __device__ __forceinline__ u32 do_full(int s) const { return base + kBarriers + 8 * (2 + kStages + s); }
  __device__ __forceinline__ u32 empty(int s) const { return base + kBarriers + 8 * (2 + 2 * kStages + s); }
  __device__ __forceinline__ u32 sched_full(int i) const { return base + kBarriers + 8 * (2 + 3 * kStages + i); }
  __device__ __forceinline__ u32 sched_empty(int i) const { return base + kBarriers + 8 * (4 + 3 * kStages + i); }
  __device__ __forceinline__ u32 sched(int i) const { return base + kSched + 4 * i; }
};

static_assert(BwdSmem::kDynamicBytes <= 227 * 1024, "backward tiles exceed 227 KB of shared memory");
#ifdef FA3LITE_SMEM_BYTES
static_assert(BwdSmem::kDynamicBytes == FA3LITE_SMEM_BYTES, "host and device disagree on the shared memory size");
#endif
static_assert(kQTileBytes % kSmemAlign == 0 && kKTileBytes % kSmemAlign == 0 && kDsTileBytes % kSmemAlign == 0,
              "tiles must keep 1024-byte alignment");

}}}  // namespace fa3lite::attn::bwd
