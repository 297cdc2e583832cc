// dK/dV epilogue of one consumer warpgroup: its kWgKeys x kWgCols block (rows from key0, columns
// from col0), straight from the accumulators to global memory (4- or 8-byte stores of adjacent
// column pairs). Rows past the sequence's seqlen_k are not written. dK carries the softmax scale (dS is the
// gradient of the scaled scores).
#pragma once
#include "../ptx/math.cuh"
#include "bwd_params.cuh"
#include "bwd_scheduler.cuh"
#include "fragment.cuh"

namespace fa3lite { namespace attn { namespace bwd {

__device__ __forceinline__ void store_pair(void* base, i64 idx, float a, float b) {
  if (kDkvF32) {
    *reinterpret_cast<float2*>(static_cast<float*>(base) + idx) = make_float2(a, b);
  } else {
    *reinterpret_cast<u32*>(static_cast<u16*>(base) + idx) = math::pack(a, b, Element{});
  }
}

__device__ __forceinline__ void bwd_store_dkv(const BwdParams& p, const BwdTile& t, int key0, int col0, int tid,
                                              const float (&dk)[kWgCols / 2], const float (&dv)[kWgCols / 2]) {
  const int rb = frag::row_base(tid);
  const int cb = frag::col_base(tid);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int key = key0 + rb + 8 * h;
    if (key < t.mask.seqlen_k) {
      // (B, Sk, Hq, D), or kVarlen (total_k, Hq, D) from the sequence's first row (read again here
      // rather than held in a register through the consumer's loop)
      const i64 key_row = kVarlen ? static_cast<i64>(__ldg(p.cu_seqlens_k + t.batch)) + key
                                  : static_cast<i64>(t.batch) * p.seqlen_k + key;
      const i64 row = key_row * p.num_heads_q + t.head;   // dK rows are kHeadDimReal wide, dV rows kHeadDimVReal
#pragma unroll
      for (int j = 0; j < kWgCols / 8; ++j) {
        const int i = 4 * j + 2 * h;
        const int col = col0 + cb + frag::col(i);
        // padding columns are not in the tensors
        if (!kPaddedQK || col < kHeadDimReal) {
          store_pair(p.dk, row * kHeadDimReal + col, dk[i] * p.softmax_scale, dk[i + 1] * p.softmax_scale);
        }
        if (!kPaddedV || col < kHeadDimVReal) store_pair(p.dv, row * kHeadDimVReal + col, dv[i], dv[i + 1]);
      }
    }
  }
}

}}}  // namespace fa3lite::attn::bwd
