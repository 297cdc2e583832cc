// Elementwise softmax gradient in the registers of an S^T accumulator (rows = keys, columns =
// queries), N query columns wide:
//   P^T  = exp2(S^T * scale_log2 - lse_log2[query])     0 where the key is hidden from the query
//   dS^T = P^T * (dP^T - dPsum[query])
// The thread's columns are cb + frag::col(i): 8-column group j gives it columns 8j + cb, +1. Their
// LSE/dPsum values are loaded from global memory (the preprocess pads both rows to whole query
// blocks, so every load is in bounds) as N/8 float2 per thread, issued while the wgmmas that
// produce S^T/dP^T run; all threads of the CTA read the same 2 x N floats, so they hit in L1.
#pragma once
#include "../ptx/math.cuh"
#include "bwd_config.cuh"
#include "bwd_params.cuh"
#include "fragment.cuh"

namespace fa3lite { namespace attn { namespace bwd {

// The thread's N/4 row statistics (LSE or dPsum) of a tile whose first query column is at `row`.
template <int N>
__device__ __forceinline__ void load_row_stats(const float* row, int tid, float (&v)[N / 4]) {
  const int cb = frag::col_base(tid);
#pragma unroll
  for (int j = 0; j < N / 8; ++j) {
    const float2 x = __ldg(reinterpret_cast<const float2*>(row + 8 * j + cb));
    v[2 * j] = x.x;
    v[2 * j + 1] = x.y;
  }
}

// key_row0: the thread's key row of accumulator half 0; query0: the tile's first query row.
template <int N>
__device__ __forceinline__ void probs_transposed(float (&st)[N / 2], const BwdParams& p, const float (&lse)[N / 4],
                                                 int tid, bool masked, int key_row0, int query0) {
  const int cb = frag::col_base(tid);
#pragma unroll
  for (int i = 0; i < N / 2; ++i) {
    // accumulator i sits in column 8 (i >> 2) + cb + (i & 1): statistic 2 (i >> 2) + (i & 1)
    float pv = math::ex2(fmaf(st[i], p.scale_log2, -lse[2 * (i >> 2) + (i & 1)]));
    if (masked) {
      const int key = key_row0 + 8 * frag::half(i);
      const int query = query0 + cb + frag::col(i);
      bool hidden = key >= p.seqlen_k;
      if (kIsCausal) hidden = hidden || static_cast<i64>(key) > static_cast<i64>(query) + p.causal_offset;
      if (hidden) pv = 0.f;
    }
    st[i] = pv;
  }
}

template <int N>
__device__ __forceinline__ void dscores_transposed(const float (&pt)[N / 2], float (&dpt)[N / 2],
                                                   const float (&dpsum)[N / 4]) {
#pragma unroll
  for (int i = 0; i < N / 2; ++i) dpt[i] = pt[i] * (dpt[i] - dpsum[2 * (i >> 2) + (i & 1)]);
}

// A fragments of k16 step kk = accumulators 8kk..8kk+7 packed pairwise; also the register order of
// one stmatrix x4 of the 16-column block kk.
template <int N>
__device__ __forceinline__ void pack_fragments(const float (&acc)[N / 2], u32 (&frag)[N / 16][4]) {
#pragma unroll
  for (int kk = 0; kk < N / 16; ++kk) {
#pragma unroll
    for (int r = 0; r < 4; ++r) frag[kk][r] = math::pack(acc[8 * kk + 2 * r], acc[8 * kk + 2 * r + 1], Element{});
  }
}

}}}  // namespace fa3lite::attn::bwd
