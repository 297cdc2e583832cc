// Consumer warpgroup: 64 query rows of the tile against every visible key block.
// Per key block: wait K -> S = Q K^T -> release K -> mask -> online softmax -> rescale O ->
// wait V -> O += P V -> release V. The two consumer warpgroups run this independently, so one's
// softmax overlaps the other's tensor-core work.
#pragma once
#include "../ptx/mbarrier.cuh"
#include "../ptx/wgmma.cuh"
#include "fwd_epilogue.cuh"
#include "fwd_mma.cuh"
#include "mask.cuh"
#include "pipeline.cuh"
#include "softmax.cuh"

namespace fa3lite { namespace attn {

// One arrival per consumer warp (lane 0, after the warp's wgmma wait): empty barriers count kConsumerWarps.
__device__ __forceinline__ void release(u32 bar, int tid) {
  if (tid % 32 == 0) mbar::arrive(bar);
}

__device__ __forceinline__ void fwd_consumer(const FwdParams& p, const FwdSmem& sm, const Tile& t, int n_end,
                                             int wg, int tid) {
  float o[kHeadDim / 2];
#pragma unroll
  for (int i = 0; i < kHeadDim / 2; ++i) o[i] = 0.f;
  OnlineSoftmax softmax;
  softmax.init();

  const int wg_row0 = t.m_block * kBlockM + wg * 64;
  const Mask mask{p.seqlen_k, p.causal_offset, wg_row0 + frag::row_base(tid), frag::col_base(tid)};
  const u32 q_wg = sm.q() + wg * 64 * kRowBytes;

  if (n_end > 0) {
    mbar::wait(sm.q_full(), 0);
    RingPos<kStages> pos;
    for (int n = n_end - 1; n >= 0; --n) {
      float s[kBlockN / 2];
      mbar::wait(sm.k_full(pos.stage), pos.phase);
      gemm_qk(s, q_wg, sm.k(pos.stage));
      wgmma::wait_group<0>();
      release(sm.k_empty(pos.stage), tid);

      if (mask.needs_mask(n, wg_row0)) mask.apply<kBlockN>(s, n);
      float corr[2];
      softmax.update<kBlockN>(s, p.scale_log2, corr);
#pragma unroll
      for (int i = 0; i < kHeadDim / 2; ++i) o[i] *= corr[frag::half(i)];
      u32 pa[kBlockN / 16][4];
      convert_p(s, pa);

      mbar::wait(sm.v_full(pos.stage), pos.phase);
      gemm_pv(o, pa, sm.v(pos.stage));
      wgmma::wait_group<0>();
      release(sm.v_empty(pos.stage), tid);
      pos.advance();
    }
  }
  float inv[2], lse[2];
  softmax.finalize(p.scale_log2, inv, lse);
  fwd_epilogue(p, sm, t, wg, tid, o, inv, lse);
}

}}  // namespace fa3lite::attn
