// TMA copies of one [D/64][rows][64] tile, shared by the forward and backward roles. Head dims that
// are multiples of 64 go through a 5-D map (64 columns, rows, D/64 column blocks, heads, batch) in
// one copy. A head dim that is not (96, 192) runs the kernel of the next multiple of 64 (128, 256):
// its map is 4-D (D_real columns, rows, heads, batch) and each 64-column block is its own copy, so
// the columns past D_real fall outside the tensor and arrive as zeros (they add nothing to Q K^T or
// P V), and stores of those columns are clipped (fa3lite/runtime/tma.py builds both maps).
#pragma once
#include "../ptx/tma.cuh"
#include "../ptx/types.cuh"

namespace fa3lite { namespace attn { namespace tile_io {

constexpr int kCols = 64;          // columns of one 128-byte swizzle row
constexpr u32 kRowBytes = 128;

template <int Rows, int ColBlocks, bool Padded>
__device__ __forceinline__ void load(u32 dst, const TmaDesc* map, u32 bar, int row, int head, int batch) {
  if constexpr (Padded) {
#pragma unroll
    for (int blk = 0; blk < ColBlocks; ++blk) {
      tma::load_4d(dst + blk * Rows * kRowBytes, map, bar, blk * kCols, row, head, batch);
    }
  } else {
    tma::load_5d(dst, map, bar, 0, row, 0, head, batch);
  }
}

// A tile of rows that come in groups (kSplit's q: a decode step's query heads of one position are a
// group, read in the step's own layout; fa3lite/runtime/tma.py grouped_geometry): the map's dims are
// (64 columns, group member, group, head, D/64 column blocks), or with padding (D columns, member,
// group, head). A box of whole groups lands as rows in order (member fastest); one copy per
// 64-column block, each at its block's place in the [D/64][Rows][64] tile, since a box may hold
// fewer than Rows rows. `group` is the tile's first.
template <int Rows, int ColBlocks, bool Padded>
__device__ __forceinline__ void load_groups(u32 dst, const TmaDesc* map, u32 bar, int group, int head) {
#pragma unroll
  for (int blk = 0; blk < ColBlocks; ++blk) {
    if constexpr (Padded) {
      tma::load_4d(dst + blk * Rows * kRowBytes, map, bar, blk * kCols, 0, group, head);
    } else {
      tma::load_5d(dst + blk * Rows * kRowBytes, map, bar, 0, 0, group, head, blk);
    }
  }
}

// Column block `blk` of a box of rows starting at `row` into `dst` (the box's rows are the map's).
template <bool Padded>
__device__ __forceinline__ void load_block(u32 dst, const TmaDesc* map, u32 bar, int blk, int row, int head, int batch) {
  if constexpr (Padded) {
    tma::load_4d(dst, map, bar, blk * kCols, row, head, batch);
  } else {
    tma::load_5d(dst, map, bar, 0, row, blk, head, batch);
  }
}

// Column block `blk` of a tile's rows starting at `row` (the box's rows and the tile's layout are the map's).
template <bool Padded>
__device__ __forceinline__ void store_block(const TmaDesc* map, u32 src, int blk, int row, int head, int batch) {
  if constexpr (Padded) {
    tma::store_4d(map, src, blk * kCols, row, head, batch);
  } else {
    tma::store_5d(map, src, 0, row, blk, head, batch);
  }
}

// kVarlen: N tensor maps of one sequence, written into `slots` (global memory, one set per CTA):
// copies of `templates` pointed at `bases` with their row dimension (dim 1 of both map shapes) cut to
// `rows`, then released to the tensormap proxy. The thread that issues copies through them acquires
// each first (tma::fence_map_acquire). One thread.
template <int N>
__device__ __forceinline__ void make_seq_maps(TmaDesc* slots, const TmaDesc* const (&templates)[N],
                                              const char* const (&bases)[N], const u32 (&rows)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
    // 16 bytes at a time, not unrolled: a whole map held in registers (32 of them) spilled in the
    // forward's producer (32 registers with three consumer warpgroups) under NVRTC 13.0.
    const uint4* const from = reinterpret_cast<const uint4*>(templates[i]);
    uint4* const to = reinterpret_cast<uint4*>(slots + i);
#pragma unroll 1
    for (int c = 0; c < static_cast<int>(sizeof(TmaDesc) / sizeof(uint4)); ++c) to[c] = from[c];
    tma::replace_address(slots + i, bases[i]);
    tma::replace_dim<1>(slots + i, rows[i]);
  }
  tma::fence_map_release();
}

}}}  // namespace fa3lite::attn::tile_io
