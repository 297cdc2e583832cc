// wgmma descriptors of the kernels' shared-memory tiles, forward and backward alike. A tile is
// [D/64 column block][rows][64 columns] of 16-bit elements: 128-byte rows, 128-byte swizzle in
// 8-row 1024-byte atoms (the layout TMA writes with CU_TENSOR_MAP_SWIZZLE_128B).
//   K-major:  k16 step kk -> +32 bytes inside a 64-column block, +rows*128 per block; SBO = 1024.
//   MN-major: k16 step kk (16 rows) -> +16*128 bytes; LBO = rows*128 (the next 64 columns); SBO = 1024.
// The step's offset is passed apart from the tile's address (wgmma::desc_sw128_at), so a k-loop
// encodes the address once and each step adds a constant.
#pragma once
#include "../ptx/wgmma.cuh"

namespace fa3lite { namespace attn {

constexpr u32 kTileRowBytes = 128;    // one swizzle row: 64 16-bit elements
constexpr u32 kAtomBytes = 1024;      // 8 rows x 128 bytes: one 128B-swizzle atom

__device__ __forceinline__ u64 kmajor_desc(u32 tile, int rows, int kk) {
  return wgmma::desc_sw128_at(tile, (kk / 4) * rows * kTileRowBytes + (kk % 4) * 32, 16, kAtomBytes);
}

__device__ __forceinline__ u64 mnmajor_desc(u32 tile, int rows, int kk) {
  return wgmma::desc_sw128_at(tile, kk * 16 * kTileRowBytes, rows * kTileRowBytes, kAtomBytes);
}

}}  // namespace fa3lite::attn
