// wgmma control, shared-memory matrix descriptors and the per-shape MMA wrappers.
#pragma once
#include "compiler.cuh"
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
// The low word (start address, LBO) is the only one that changes between k-steps and stages; the
// high word is a constant. Shared-window addresses are below 2^18, so a tile's start field plus the
// 16-byte units of any offset inside shared memory stays within its 14 bits: desc_lo(a) + off / 16
// equals desc_lo(a + off). desc_sw128_at builds on that, so that a loop of k-steps encodes the
// tile's address once and adds a constant per step (one integer add instead of a mask, shift and OR).
__device__ __forceinline__ u32 desc_lo(u32 smem, u32 lbo_bytes) {
  return ((smem & 0x3FFFF) >> 4) | (((lbo_bytes & 0x3FFFF) >> 4) << 16);
}

__device__ __forceinline__ constexpr u32 desc_hi_sw128(u32 sbo_bytes) {
  return ((sbo_bytes & 0x3FFFF) >> 4) | (1u << 30);
}

// Descriptor of the operand at tile + offset_bytes (offset a multiple of 16). The step goes onto
// the whole 64-bit descriptor (no carry reaches the high word, above), whose halves the compiler
// does not see: one 64-bit uniform add per wgmma operand. Seen through, it added to the low word
// and paired it with the high word again for every wgmma (two instructions, three for some).
__device__ __forceinline__ u64 desc_sw128_at(u32 tile, u32 offset_bytes, u32 lbo_bytes, u32 sbo_bytes) {
  const u64 base = compiler::opaque((static_cast<u64>(desc_hi_sw128(sbo_bytes)) << 32) | desc_lo(tile, lbo_bytes));
  return base + (offset_bytes >> 4);
}

__device__ __forceinline__ u64 desc_sw128(u32 smem, u32 lbo_bytes, u32 sbo_bytes) {
  return desc_sw128_at(smem, 0, lbo_bytes, sbo_bytes);
}

}}  // namespace fa3lite::wgmma
