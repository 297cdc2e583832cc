// The two GEMMs of the forward mainloop, issued by one consumer warpgroup.
//   S = Q K^T : A = Q rows of this warpgroup (smem, K-major), B = K tile (smem, K-major)
//   O += P V  : A = P (registers, converted from S), B = V tile (smem, read MN-major: trans-b = 1)
// Descriptors of the tiles: tile_desc.cuh.
#pragma once
#include "../ptx/sync.cuh"
#include "../ptx/wgmma.cuh"
#include "config.cuh"
#include "tile_desc.cuh"

namespace fa3lite { namespace attn {

// S (64 x kBlockN) = Q_wg (64 x D) K^T; q_wg is the address of this warpgroup's first Q row.
__device__ __forceinline__ void gemm_qk(float (&s)[kBlockN / 2], u32 q_wg, u32 k_tile) {
  wgmma::fence();
#pragma unroll
  for (int kk = 0; kk < kHeadDim / 16; ++kk) {
    wgmma::mma<kBlockN, Element>::template ss<0, 0>(
        s, kmajor_desc(q_wg, kBlockM, kk), kmajor_desc(k_tile, kBlockN, kk), kk > 0);
  }
  wgmma::commit_group();
}

// O (64 x D) += P (64 x kBlockN) V; p holds P in the A-fragment layout, one 4-register group per k16 step.
__device__ __forceinline__ void gemm_pv(float (&o)[kHeadDim / 2], const u32 (&p)[kBlockN / 16][4], u32 v_tile) {
  wgmma::fence();
#pragma unroll
  for (int kk = 0; kk < kBlockN / 16; ++kk) {
    wgmma::mma<kHeadDim, Element>::template rs<1>(o, p[kk], mnmajor_desc(v_tile, kBlockN, kk), 1);
  }
  wgmma::commit_group();
}

// P's A fragment for k16 step kk is S's accumulators 8kk..8kk+7 packed pairwise (same layout).
__device__ __forceinline__ void convert_p(const float (&s)[kBlockN / 2], u32 (&p)[kBlockN / 16][4]) {
#pragma unroll
  for (int kk = 0; kk < kBlockN / 16; ++kk) {
#pragma unroll
    for (int j = 0; j < 4; ++j) p[kk][j] = math::pack(s[8 * kk + 2 * j], s[8 * kk + 2 * j + 1], Element{});
  }
}

}}  // namespace fa3lite::attn
