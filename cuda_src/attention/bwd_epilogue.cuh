// dK/dV epilogue of the consumer warpgroups: each holds a kWgKeys x kWgCols block of dK and dV (rows
// from key0, columns from col0) in wgmma accumulator order. Rows past the sequence's seqlen_k are
// not written, nor padding columns. dK carries the softmax scale (dS is the gradient of the scaled
// scores).
//   16-bit dK/dV (stage_block, copy_out): the accumulators, converted, go into row-major tiles in the
//     K and V buffers (free once both warpgroups' last wgmmas completed: a consumer barrier), 16-byte
//     chunks XOR row % 8 so the quad-wise pair stores are conflict-free; then all consumer threads
//     copy whole rows out in 16-byte stores. Stored straight from the fragments, each warp store
//     wrote 16 bytes per row, half of every 32-byte sector; in a short CTA (causal at 1k keys) that
//     epilogue was ~15% of the kernel's stall samples.
//   f32 dK/dV (GQA, bwd_store_dkv_direct): 8-byte pairs from the fragments, whole sectors already.
#pragma once
#include "../ptx/gmem.cuh"
#include "../ptx/math.cuh"
#include "../ptx/mbarrier.cuh"
#include "../ptx/smem_vec.cuh"
#include "../ptx/sync.cuh"
#include "bwd_params.cuh"
#include "bwd_scheduler.cuh"
#include "bwd_smem.cuh"
#include "fragment.cuh"

namespace fa3lite { namespace attn { namespace bwd {

// Heads in a row of dK/dV: Hq in f32 (kDkvF32, per query head), else Hk (one CTA sums its K/V
// head's whole group: bwd_scheduler.cuh).
__device__ __forceinline__ int dkv_heads(const BwdParams& p) {
  return kDkvF32 ? p.num_heads_q : p.num_heads_q / p.head_group;
}

// First element of key row `key` (of the CTA's sequence) in dK (width kHeadDimReal) or dV (width).
__device__ __forceinline__ i64 dkv_row(const BwdParams& p, const BwdTile& t, int key, int width) {
  // (B, Sk, H, D), or kVarlen (total_k, H, D) from the sequence's first row (read again here
  // rather than held in a register through the consumer's loop)
  const i64 key_row = kVarlen ? static_cast<i64>(__ldg(p.cu_seqlens_k + t.batch)) + key
                              : static_cast<i64>(t.batch) * p.seqlen_k + key;
  return (key_row * dkv_heads(p) + (kDkvF32 ? t.head : t.head_kv)) * width;
}

__device__ __forceinline__ void bwd_store_dkv_direct(const BwdParams& p, const BwdTile& t, int key0, int col0, int tid,
                                                     const float (&dk)[kWgCols / 2], const float (&dv)[kWgCols / 2]) {
  const int rb = frag::row_base(tid);
  const int cb = frag::col_base(tid);
  float* const dk_out = static_cast<float*>(p.dk);
  float* const dv_out = static_cast<float*>(p.dv);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int key = key0 + rb + 8 * h;
    if (key < t.mask.seqlen_k) {
      const i64 dk_row = dkv_row(p, t, key, kHeadDimReal);
      const i64 dv_row = dkv_row(p, t, key, kHeadDimVReal);
#pragma unroll
      for (int j = 0; j < kWgCols / 8; ++j) {
        const int i = 4 * j + 2 * h;
        const int col = col0 + cb + frag::col(i);
        if (!kPaddedQK || col < kHeadDimReal) {
          gmem::st_v2_f32(dk_out + dk_row + col, dk[i] * p.softmax_scale, dk[i + 1] * p.softmax_scale);
        }
        if (!kPaddedV || col < kHeadDimVReal) gmem::st_v2_f32(dv_out + dv_row + col, dv[i], dv[i + 1]);
      }
    }
  }
}

// Byte offset of the column pair (row, col) in a staged row-major tile (kHeadDim 16-bit columns).
__device__ __forceinline__ u32 staged_at(int row, int col) {
  constexpr int kRowBytes16 = kHeadDim * kElemBytes;
  return row * kRowBytes16 + (((col / 8) ^ (row % 8)) * 16) + (col % 8) * kElemBytes;
}

// This warpgroup's block into the staged tile at `tile`, each value times `scale`.
__device__ __forceinline__ void stage_block(u32 tile, int row0, int col0, int tid, const float (&acc)[kWgCols / 2],
                                            float scale) {
  const int rb = frag::row_base(tid);
  const int cb = frag::col_base(tid);
#pragma unroll
  for (int i = 0; i < kWgCols / 2; i += 2) {
    const int row = row0 + rb + 8 * frag::half(i);
    const int col = col0 + cb + frag::col(i);
    smem_vec::st_u32(tile + staged_at(row, col), math::pack(acc[i] * scale, acc[i + 1] * scale, Element{}));
  }
}

// The staged tile's rows [0, kBlockN) that are in the sequence, `width` real columns each, to `out`.
// Run by every consumer thread (ctid in [0, kConsumerThreads)). Row addresses step from the block's
// first row: computed per chunk with dkv_row, its Hq / group division ran in every iteration (ptxas
// did not hoist it), ~540 SASS instructions of the kernel. Time: within the A/B's spread
// (benchmarks/RESULTS.md section 52).
__device__ __forceinline__ void copy_out(const BwdParams& p, const BwdTile& t, u32 tile, u16* out, int width,
                                         int ctid) {
  const int chunks = width / 8;   // 16-byte chunks of a row
  const int key_base = t.n_block * kBlockN;
  const int rows = min(kBlockN, t.mask.seqlen_k - key_base);
  u16* const block = out + dkv_row(p, t, key_base, width);
  const i64 row_elems = static_cast<i64>(dkv_heads(p)) * width;
  for (int c = ctid; c < rows * chunks; c += kConsumerThreads) {
    const int row = c / chunks;
    const int chunk = c % chunks;
    const uint4 v = smem_vec::ld_v4(tile + staged_at(row, chunk * 8));
    gmem::st_v4(block + row * row_elems + chunk * 8, v);
  }
}

// The end of a tile, for both consumer warpgroups once their last wgmma completed: dK/dV out (row0 /
// col0: the warpgroup's block within the CTA's kBlockN x D tile), then sK/sV handed back to the
// producer for the CTA's next tile (kv_empty). The barrier first: no warpgroup reads K or V any more
// once both are here, and neither writes its next tile's first dS^T (or P^T) while the other's last
// wgmmas may still read the buffer (the consumers' dS^T hand-offs start afresh with each tile).
__device__ __forceinline__ void bwd_end_tile(const BwdParams& p, const BwdSmem& sm, const BwdTile& t, int row0,
                                             int col0, int wg, int tid, const float (&dk)[kWgCols / 2],
                                             const float (&dv)[kWgCols / 2]) {
  named_barrier::sync(static_cast<u32>(NamedBarrier::kEpilogue), kConsumerThreads);
  // The thread index read here, not taken from the caller: ptxas otherwise computed the epilogue's
  // addresses once before the CTA's tile loop and spilled them through the mainloop. (Narrow f32
  // dK/dV keep the caller's: there the re-read itself cost a spill at D = 64.)
  if constexpr (kWide || !kDkvF32) tid = warpgroup::thread_here();
  if constexpr (kNeedDkv && kDkvF32) {
    bwd_store_dkv_direct(p, t, t.n_block * kBlockN + row0, col0, tid, dk, dv);
  } else if constexpr (kNeedDkv) {
    stage_block(sm.k(), row0, col0, tid, dk, p.softmax_scale);
    stage_block(sm.v(), row0, col0, tid, dv, 1.f);
    named_barrier::sync(static_cast<u32>(NamedBarrier::kEpilogue), kConsumerThreads);
    const int ctid = wg * kWarpgroupThreads + tid;
    copy_out(p, t, sm.k(), static_cast<u16*>(p.dk), kHeadDimReal, ctid);
    copy_out(p, t, sm.v(), static_cast<u16*>(p.dv), kHeadDimVReal, ctid);
    fence::proxy_async_smem();   // the staged tiles' generic stores before the next tile's TMA loads there
  }
  mbar::arrive(sm.kv_empty());
}

}}}  // namespace fa3lite::attn::bwd
