// wgmma control, shared-memory matrix descriptors and the per-shape MMA wrappers.
#pragma once
#include "types.cuh"
#include "wgmma_ops.cuh"

namespace fa3lite { namespace wgmma {

// Order earlier register writes (accumulators, A fragments) before the next wgmma reads them.
__device__ __forceinline__ void fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

// Close the wgmmas issued since the last commit into one group.
__device__ __forceinline__ void commit_group() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

// Wait until at most N committed groups are pending; their accumulators are then readable.
template <int N>
__device__ __forceinline__ void wait_group() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
}

// 64-bit shared-memory matrix descriptor with 128-byte swizzle. Fields are in 16-byte units:
// bits 0-13 start address, 16-29 leading byte offset, 32-45 stride byte offset, 62-63 = 1 (128B swizzle).
// Tiles are 1024-byte aligned, so the base-offset field (bits 49-51) stays 0.
__device__ __forceinline__ u64 desc_sw128(u32 smem, u32 lbo_bytes, u32 sbo_bytes) {
  return static_cast<u64>((smem & 0x3FFFF) >> 4) |
         (static_cast<u64>((lbo_bytes & 0x3FFFF) >> 4) << 16) |
         (static_cast<u64>((sbo_bytes & 0x3FFFF) >> 4) << 32) |
         (static_cast<u64>(1) << 62);
}

}}  // namespace fa3lite::wgmma
