// Shared pieces of both backward consumers: register fences, the mask test and the dS^T/P^T
// stmatrix stores (the tiles' wgmma descriptors are in tile_desc.cuh).
#pragma once
#include "../ptx/mbarrier.cuh"
#include "../ptx/smem.cuh"
#include "../ptx/sync.cuh"
#include "../ptx/wgmma.cuh"
#include "bwd_config.cuh"
#include "bwd_params.cuh"
#include "bwd_scheduler.cuh"
#include "tile_desc.cuh"

namespace fa3lite { namespace attn { namespace bwd {

// This thread is done with a ring stage, its shared-memory reads of the stage's stats rows included:
// one arrival on the stage's empty barrier (initialised to every consumer thread). Each thread
// releases its own reads, so the producer's next bulk copy into the stage is ordered after all of
// them without a warp barrier. (One arrival per warp after a warp barrier is also ordered by the
// memory model, but compute-sanitizer's racecheck does not follow that chain: 24 false hazards.)
__device__ __forceinline__ void release_stage(u32 empty_bar) { mbar::arrive(empty_bar); }

template <int N>
__device__ __forceinline__ void fence_regs(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) fence::reg(r[i]);
}

// Keys [key0, key0 + kWgKeys) that some query of block m must not see: past seqlen_k, or outside the
// band i + local_offset <= j <= i + causal_offset (kIsCausal). The host keeps both offsets within
// +-2^30, so no sum here overflows.
__device__ __forceinline__ bool needs_mask(const SeqMask& mk, int key0, int m) {
  const int last_key = key0 + kWgKeys - 1;
  const bool tail = last_key >= mk.seqlen_k;
  const bool upper = kIsCausal && last_key > m * kBlockM + mk.causal_offset;
  const bool lower = kIsCausal && key0 < m * kBlockM + kBlockM - 1 + mk.local_offset;
  return tail || upper || lower;
}

// Byte offset of the 16-byte chunk that lane `lane` addresses in stmatrix call j (16 columns each) of
// a swizzled [key row][query] tile of kBlockN rows: row 16 w + lane % 16 (plus row0), column
// col0 + 16 j + 8 (lane / 16), which lies in 64-column block col / 64 (a whole number of atoms,
// so the block's offset leaves the row's swizzle bits alone).
__device__ __forceinline__ u32 stmatrix_offset(int row0, int col0, int tid, int j) {
  const int lane = tid % 32;
  const int col = col0 + 16 * j + 8 * (lane / 16);
  u32 byte = (row0 + 16 * (tid / 32) + lane % 16) * kRowBytes + (col % kSwizzleCols) * kElemBytes;
  byte ^= ((byte >> 7) & 7u) << 4;
  return (col / kSwizzleCols) * kBlockN * kRowBytes + byte;
}

// One warpgroup's packed N-column accumulator (pack_fragments) into a swizzled [key row][query] tile:
// rows from row0, columns from col0, one stmatrix x4 per 16 columns.
template <int N>
__device__ __forceinline__ void stmatrix_fragments(u32 tile, int row0, int col0, int tid, const u32 (&f)[N / 16][4]) {
#pragma unroll
  for (int j = 0; j < N / 16; ++j) {
    smem::stmatrix_x4(tile + stmatrix_offset(row0, col0, tid, j), f[j][0], f[j][1], f[j][2], f[j][3]);
  }
}

}}}  // namespace fa3lite::attn::bwd
