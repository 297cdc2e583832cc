// Epilogue of one consumer warpgroup: normalise O, write LSE, store O through shared memory.
// O goes into this warpgroup's 64 rows of sO (sm.o(): its own buffer, or sQ, whose rows this
// warpgroup no longer reads) in the same [D/64][rows][64] swizzled layout TMA uses, then one thread
// stores each 64-column block with a TMA store; rows past seqlen_q are clipped by the TMA unit, so a
// partial tile never writes out of bounds. kDirectO (no room for sO in a persistent CTA) stores O
// from registers instead (store_rows), leaving sQ to the next tile's Q. Buffer hand-offs, per warpgroup:
//   - with its own sO, the thread that stores waits for the TMA engine to have read the previous
//     tile's O only when it comes to write the next one (and before the CTA exits: wait_o_read), so
//     the warpgroup goes on to its next tile's GEMMs while the store runs; the warpgroup barrier at
//     the start keeps every other thread from overwriting the rows before that wait;
//   - O staged in sQ (no sO): the thread waits at once and then frees sQ for the producer's next Q
//     (q_empty).
// kVarlen: the packed O has no map cut at the sequence's end, so the warpgroup copies its staged rows
// out itself, skipping rows past the end (copy_out_rows), or with kDirectO (D = 192/256) stores them
// from registers at their packed rows; LSE is (Hq, total_q) there. A tile that sees no key writes
// its zeros without staging: with O in sQ, the producer of a persistent CTA may already be loading
// the next tile's Q there (only tiles with keys take part in the Q hand-off).
#pragma once
#include "../ptx/gmem.cuh"
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
#include "tile_io.cuh"

namespace fa3lite { namespace attn {

// Byte offset of (row, col) inside a [D/64][rows][64] tile with the 128-byte swizzle applied
// (16-byte chunk index XOR row % 8; valid because the tile is 1024-byte aligned).
__device__ __forceinline__ u32 swizzled_offset(int row, int col, int rows) {
  const u32 byte = (col / kSwizzleCols) * rows * kRowBytes + row * kRowBytes + (col % kSwizzleCols) * kElemBytes;
  return byte ^ (((byte >> 7) & 7u) << 4);
}

// kVarlen: where packed row `row` of head `head` goes in O (bytes) and LSE (elements): plain rows in
// the dense kernel, rows in groups in the split kernel (params.cuh).
__device__ __forceinline__ i64 o_offset(const FwdParams& p, int row, int head) {
  if constexpr (kSplit) {
    return (row / p.row_group) * p.o_row_bytes + (row % p.row_group) * p.o_member_bytes + head * p.o_head_bytes;
  }
  return static_cast<i64>(row) * p.o_row_bytes + head * p.o_head_bytes;
}

__device__ __forceinline__ i64 lse_offset(const FwdParams& p, int row, int head) {
  if constexpr (kSplit) {
    return (row / p.row_group) * p.lse_row_stride + (row % p.row_group) * p.lse_member_stride +
           head * p.lse_head_stride;
  }
  return head * p.lse_head_stride + row;
}

// kVarlen: the warpgroup's staged rows of sO (or zeros: `staged` false) to the packed O, 16 bytes a
// thread at a time, rows past the sequence's end skipped (a TMA store through the packed map would
// write the next sequence's rows).
__device__ __forceinline__ void copy_out_rows(const FwdParams& p, const FwdSmem& sm, const Tile& t, const Seq& sq,
                                              int wg_row, int tid, bool staged) {
  constexpr int kChunks = kHeadDimVReal / 8;            // 16-byte chunks of one row (not the padding)
  const int row0 = t.m_block * kBlockM + wg_row;        // the warpgroup's first row in the sequence
#pragma unroll 4
  for (int i = tid; i < 64 * kChunks; i += kWarpgroupThreads) {
    const int r = i / kChunks;
    const int c = i % kChunks;
    if (row0 + r < sq.seqlen_q) {
      const uint4 v = staged ? smem::ld_v4(sm.o() + swizzled_offset(wg_row + r, 8 * c, kBlockM)) : uint4{0, 0, 0, 0};
      char* dst = p.o_base + o_offset(p, sq.q_start + row0 + r, t.head) + 8 * c * kElemBytes;
      gmem::st_v4(dst, v);
    }
  }
}

// kVarlenTiles: zeros in O and -inf in LSE for the rows no sequence owns -- before the first
// sequence, between one's used rows and the next one's start, after the last -- which the host does
// not fill beforehand (O and LSE come uninitialised). Region b (the rows before sequence b,
// b = 0..B) goes to CTA b % gridDim.x, whose consumer threads (`tid` of `threads`) write it once
// they run out of tiles; usually it has no row. With non-decreasing cu_seqlens_q these are exactly
// the rows no tile writes; every bound is clamped to the packed rows as seq_of clamps, so malformed
// values may leave rows unwritten but never write out of bounds.
__device__ __forceinline__ void fill_gap_rows(const FwdParams& p, int tid, int threads) {
  constexpr int kChunks = kHeadDimVReal / 8;            // 16-byte chunks of one head's row of O
  const int seqs = num_seqs(p);
  const int row_chunks = p.num_heads_q * kChunks;
#pragma unroll 1
  for (int b = blockIdx.x; b <= seqs; b += gridDim.x) {
    int first = 0;
    if (b > 0) {
      const Seq s = seq_of(p, b - 1);
      first = s.q_start + s.seqlen_q;
    }
    const int last = b < seqs ? q_start_of(p, b) : p.seqlen_q;
#pragma unroll 1
    for (int row = first; row < last; ++row) {
      char* const o = p.o_base + static_cast<i64>(row) * p.o_row_bytes;
#pragma unroll 1
      for (int c = tid; c < row_chunks; c += threads) {
        gmem::st_v4(o + (c / kChunks) * p.o_head_bytes + (c % kChunks) * 16, uint4{0, 0, 0, 0});
      }
      if (p.lse == nullptr) continue;
#pragma unroll 1
      for (int h = tid; h < p.num_heads_q; h += threads) p.lse[h * p.lse_head_stride + row] = math::neg_inf();
    }
  }
}

// kSplit with several splits: this split's O rows (normalised over its keys) and LSE, f32, straight
// from the accumulator fragment to o_accum / lse_accum (a decode tile has few rows: no staging).
// Every row of the sequence in the tile is written, -inf and zeros where the split saw no key, so
// the combine reads only written values.
__device__ __forceinline__ void write_partial(const FwdParams& p, const Tile& t, const Seq& sq, int wg, int tid,
                                              const float (&o)[kHeadDim / 2], const float (&inv)[2],
                                              const float (&lse)[2]) {
  const int rb = frag::row_base(tid);
  const int cb = frag::col_base(tid);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = t.m_block * kBlockM + wg * 64 + rb + 8 * h;
    if (row >= sq.seqlen_q) continue;
    const i64 packed_row = sq.q_start + row;
    if (tid % 4 == 0) {
      p.lse_accum[(static_cast<i64>(t.split) * p.num_heads_q + t.head) * p.seqlen_q + packed_row] = lse[h];
    }
    float* dst = p.o_accum + ((static_cast<i64>(t.split) * p.seqlen_q + packed_row) * p.num_heads_q + t.head) *
                             kHeadDimVReal;
#pragma unroll
    for (int i = 0; i < kHeadDim / 2; i += 2) {
      if (frag::half(i) != h) continue;
      const int col = cb + frag::col(i);
      if (col < kHeadDimVReal) gmem::st_v2_f32(dst + col, o[i] * inv[h], o[i + 1] * inv[h]);
    }
  }
}

// kDirectO: a quad's four words of one row (two 16-bit columns each) in chunks c = 0..3 of a group
// of four 8-column chunks -- lane q holds columns 2q, 2q + 1 of each -- transposed so that lane q holds
// chunk q whole (its columns 0..7 in w[0..3]): two butterfly steps, each swapping one bit of the lane
// with that bit of the chunk (shfl.sync.bfly across the quad, the other two words staying).
__device__ __forceinline__ void quad_transpose(u32 (&w)[4], int lane) {
#pragma unroll
  for (int bit = 1; bit <= 2; bit <<= 1) {
    const bool high = lane & bit;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      if (c & bit) continue;   // pair (c, c | bit): the lane sends the one whose bit differs from its own
      const u32 got = warp::shfl_xor(high ? w[c] : w[c | bit], bit);
      if (high) w[c] = got; else w[c | bit] = got;
    }
  }
}

// kDirectO: this warpgroup's rows of O, normalised, in the input dtype, straight from the accumulator
// fragment. Per row and group of four 8-column chunks the quad transposes its words (quad_transpose),
// so each lane stores one chunk in a 16-byte store and the quad 64 contiguous bytes (4-byte stores
// cost a memory transaction per row each: 8% slower at 1k). Rows past seqlen_q and columns of padding
// (D = 192 in 256) are skipped; the shuffles run in every lane.
__device__ __forceinline__ void store_rows(const FwdParams& p, const Tile& t, const Seq& sq, int wg_row, int tid,
                                           const float (&o)[kHeadDim / 2], const float (&inv)[2]) {
  static_assert(kHeadDimVReal % 32 == 0, "O's columns come in groups of four 8-column chunks");
  const int rb = frag::row_base(tid);
  const int q = tid % 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = t.m_block * kBlockM + wg_row + rb + 8 * h;
    // kVarlen: packed row q_start + row of (total_q, Hq, Dv); fixed lengths: row of batch t.batch, in
    // 64 bits (B * Sq may pass 2^31, which o_offset's int row would not hold)
    const i64 packed_row = kVarlen ? static_cast<i64>(sq.q_start) + row : static_cast<i64>(t.batch) * p.seqlen_q + row;
    char* const dst = p.o_base + packed_row * p.o_row_bytes + t.head * p.o_head_bytes + q * 8 * kElemBytes;
#pragma unroll
    for (int g = 0; g < kHeadDimVReal / 32; ++g) {   // chunks 4g .. 4g + 3: accumulator pairs i = 16g + 4c + 2h
      u32 w[4];
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int i = 16 * g + 4 * c + 2 * h;
        w[c] = math::pack(o[i] * inv[h], o[i + 1] * inv[h], Element{});
      }
      quad_transpose(w, q);
      if (row < sq.seqlen_q) gmem::st_v4(dst + g * 32 * kElemBytes, uint4{w[0], w[1], w[2], w[3]});
    }
  }
}

// Without kDirectO: this warpgroup's rows of O, normalised, through sO (TMA stores for fixed lengths,
// row copies clipped at the sequence's end for kVarlen).
__device__ __forceinline__ void stage_rows(const FwdParams& p, const FwdSmem& sm, const Tile& t, const Seq& sq,
                                           u32 wg_bar, int wg_row, int tid, const float (&o)[kHeadDim / 2],
                                           const float (&inv)[2], bool has_keys) {
  const int rb = frag::row_base(tid);
  const int cb = frag::col_base(tid);
  if constexpr (kVarlen) {
    if (!has_keys) {
      copy_out_rows(p, sm, t, sq, wg_row, tid, false);
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < kHeadDim / 2; i += 2) {
    const int h = frag::half(i);
    const u32 packed = math::pack(o[i] * inv[h], o[i + 1] * inv[h], Element{});
    smem::st_u32(sm.o() + swizzled_offset(wg_row + rb + 8 * h, cb + frag::col(i), kBlockM), packed);
  }
  if constexpr (kVarlen) {
    named_barrier::sync(wg_bar, kWarpgroupThreads);   // every thread's rows are in sO
    copy_out_rows(p, sm, t, sq, wg_row, tid, true);
    // A persistent CTA's next epilogue writes sO only after the barrier at fwd_epilogue's start,
    // so after every thread's reads here; with O in sQ, the producer's next Q waits for them too.
    if constexpr (kPersistent && !kSeparateO) {
      named_barrier::sync(wg_bar, kWarpgroupThreads);
      if (tid == 0) mbar::arrive(sm.q_empty(0));
    }
    return;
  }
  // The TMA engine reads smem through the async proxy: make the generic stores visible to it, then
  // wait for the whole warpgroup before one thread issues the copies.
  fence::proxy_async_smem();
  named_barrier::sync(wg_bar, kWarpgroupThreads);
  const int row0 = t.m_block * kBlockM + wg_row;
  if (tid == 0) {
    if (row0 < sq.seqlen_q) {
#pragma unroll
      for (int blk = 0; blk < kColBlocks; ++blk) {
        if (blk * tile_io::kCols >= kHeadDimVReal) continue;   // a block of padding only
        tile_io::store_block<kPaddedV>(&p.o, sm.o() + blk * kBlockM * kRowBytes + wg_row * kRowBytes, blk, row0,
                                       t.head, t.batch);
      }
      tma::commit_group();
      if constexpr (!kSeparateO) tma::wait_group_read<0>();   // sQ takes the next Q once read
    }
    if (!kSeparateO && has_keys) mbar::arrive(sm.q_empty(0));
  }
}

__device__ __forceinline__ void fwd_epilogue(const FwdParams& p, const FwdSmem& sm, const Tile& t, const Seq& sq,
                                             int wg, int tid, const float (&o)[kHeadDim / 2], const float (&inv)[2],
                                             const float (&lse)[2], bool has_keys) {
  if constexpr (kSplit) {
    if (p.num_splits > 1) {   // one tile per CTA: no buffer hand-off to keep (as for kVarlen in stage_rows)
      write_partial(p, t, sq, wg, tid, o, inv, lse);
      return;
    }
  }
  const u32 wg_bar = static_cast<u32>(NamedBarrier::kEpilogueWg0) + wg;
  if (kSeparateO && !kVarlen && tid == 0) tma::wait_group_read<0>();   // the previous tile's O has left sO
  if constexpr (!kDirectO) named_barrier::sync(wg_bar, kWarpgroupThreads);
  const int wg_row = wg * 64;                       // first tile row of this warpgroup
  const int rb = frag::row_base(tid);

  if (tid % 4 == 0 && p.lse != nullptr) {   // null: the caller keeps no LSE (an inference call)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = t.m_block * kBlockM + wg_row + rb + 8 * h;
      if (row < sq.seqlen_q) {
        // (B, Hq, Sq), or kVarlen through lse_offset
        const i64 idx = kVarlen ? lse_offset(p, sq.q_start + row, t.head)
                                : (static_cast<i64>(t.batch) * p.num_heads_q + t.head) * p.seqlen_q + row;
        p.lse[idx] = lse[h];
      }
    }
  }

  if constexpr (kDirectO) store_rows(p, t, sq, wg_row, tid, o, inv);
  else stage_rows(p, sm, t, sq, wg_bar, wg_row, tid, o, inv, has_keys);
}

// Before a consumer warpgroup's threads exit: shared memory must stay valid until the TMA engine has
// read the last O stored from it (the epilogue waits for each store only when it stages the next).
__device__ __forceinline__ void wait_o_read(int tid) {
  if (kSeparateO && !kVarlen && tid == 0) tma::wait_group_read<0>();
}

}}  // namespace fa3lite::attn
