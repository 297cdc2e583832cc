// Epilogue of one consumer warpgroup: normalise O, write LSE, store O through shared memory.
// O goes into this warpgroup's 64 rows of sO (sm.o(): its own buffer, or sQ, whose rows this
// warpgroup no longer reads) in the same [D/64][rows][64] swizzled layout TMA uses, then one thread
// stores each 64-column block with a TMA store; rows past seqlen_q are clipped by the TMA unit, so a
// partial tile never writes out of bounds. Buffer hand-offs, per warpgroup:
//   - the thread that stored the previous tile's O waited until the TMA engine had read it; the
//     warpgroup barrier at the start keeps every other thread from overwriting the rows before that;
//   - O staged in sQ (no sO): once read, that thread frees sQ for the producer's next Q (q_empty).
#pragma once
#include "../ptx/math.cuh"
#include "../ptx/mbarrier.cuh"
#include "../ptx/smem.cuh"
#include "../ptx/sync.cuh"
#include "../ptx/tma.cuh"
#include "fragment.cuh"
#include "fwd_smem.cuh"
#include "named_barriers.cuh"
#include "params.cuh"
#include "scheduler.cuh"

namespace fa3lite { namespace attn {

// Byte offset of (row, col) inside a [D/64][rows][64] tile with the 128-byte swizzle applied
// (16-byte chunk index XOR row % 8; valid because the tile is 1024-byte aligned).
__device__ __forceinline__ u32 swizzled_offset(int row, int col, int rows) {
  const u32 byte = (col / kSwizzleCols) * rows * kRowBytes + row * kRowBytes + (col % kSwizzleCols) * kElemBytes;
  return byte ^ (((byte >> 7) & 7u) << 4);
}

__device__ __forceinline__ void fwd_epilogue(const FwdParams& p, const FwdSmem& sm, const Tile& t, int wg, int tid,
                                             const float (&o)[kHeadDim / 2], const float (&inv)[2],
                                             const float (&lse)[2], bool has_keys) {
  const u32 wg_bar = static_cast<u32>(NamedBarrier::kEpilogueWg0) + wg;
  named_barrier::sync(wg_bar, kWarpgroupThreads);
  const int wg_row = wg * 64;                       // first tile row of this warpgroup
  const int rb = frag::row_base(tid);
  const int cb = frag::col_base(tid);

  if (tid % 4 == 0) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = t.m_block * kBlockM + wg_row + rb + 8 * h;
      if (row < p.seqlen_q) {
        const i64 idx = (static_cast<i64>(t.batch) * p.num_heads_q + t.head) * p.seqlen_q + row;
        p.lse[idx] = lse[h];
      }
    }
  }

#pragma unroll
  for (int i = 0; i < kHeadDim / 2; i += 2) {
    const int h = frag::half(i);
    const u32 packed = math::pack(o[i] * inv[h], o[i + 1] * inv[h], Element{});
    smem::st_u32(sm.o() + swizzled_offset(wg_row + rb + 8 * h, cb + frag::col(i), kBlockM), packed);
  }
  // The TMA engine reads smem through the async proxy: make the generic stores visible to it, then
  // wait for the whole warpgroup before one thread issues the copies.
  fence::proxy_async_smem();
  named_barrier::sync(wg_bar, kWarpgroupThreads);
  const int row0 = t.m_block * kBlockM + wg_row;
  if (tid == 0) {
    if (row0 < p.seqlen_q) {
#pragma unroll
      for (int blk = 0; blk < kColBlocks; ++blk) {
        tma::store_5d(&p.o, sm.o() + blk * kBlockM * kRowBytes + wg_row * kRowBytes, 0, row0, blk, t.head, t.batch);
      }
      tma::commit_group();
      tma::wait_group_read<0>();  // smem must stay valid until the engine has read it
    }
    if (!kSeparateO && has_keys) mbar::arrive(sm.q_empty());
  }
}

}}  // namespace fa3lite::attn
