// Wide consumer (D = 256), warpgroup wg (0 or 1): all kBlockN = 64 key rows of the CTA, dK/dV/dQ
// columns [128 wg, 128 wg + 128). Per query block m (ring stage s):
//
//   S^T_wg  = K Q_wg^T         SS wgmma m64n32, Q_wg = query rows [32 wg, 32 wg + 32) of the tile
//   dP^T_wg = V dO_wg^T        SS wgmma m64n32
//   P^T, dS^T for those 32 query columns (bwd_softmax.cuh) -> stmatrix into sP / sdS
//   -- kDsFull: both warpgroups' halves are in smem --
//   dV_wg += P^T dO[:, cols]   SS wgmma m64n128, A = sP (K-major), B = dO read MN-major
//   dK_wg += dS^T Q[:, cols]   SS, A = sdS (K-major), B = Q MN-major
//   dQ_wg  = dS K[:, cols]     SS, A = sdS read M-major (trans-a), B = K MN-major
//   dQ_wg -> global f32 accumulator with red.global.add.v4.f32 in fragment order (bwd_dq.cuh)
//
// sP/sdS are double-buffered like the narrow dS^T tile: buffer m % 2 is rewritten at block m + 2,
// after both warpgroups passed kDsFull of block m + 1, which each reaches after its wgmmas of block
// m completed. Deterministic mode: the warpgroup adds when its turn keeper (a producer warp,
// bwd_dq.cuh) has seen the key block's turn come on the warpgroup's own counter, and goes on; the
// keeper waits for the additions and passes the turn on.
//
// Variants (bwd_config.cuh): without dK/dV there is no sP (no P^T stores, no dV/dK wgmmas, no dK/dV
// registers), and the stage is released once dS^T is formed (dQ reads sdS and K only); without
// dQ the dQ wgmma and the reductions (with their turn barriers) go, while sdS and kDsFull stay for
// dK. Either way each consumer thread arrives on empty(s) exactly once per query block.
#pragma once
#include "../ptx/gmem.cuh"
#include "../ptx/mbarrier.cuh"
#include "../ptx/smem.cuh"
#include "../ptx/sync.cuh"
#include "../ptx/wgmma.cuh"
#include "bwd_dq.cuh"
#include "bwd_epilogue.cuh"
#include "bwd_mma.cuh"
#include "bwd_scheduler.cuh"
#include "bwd_smem.cuh"
#include "bwd_softmax.cuh"
#include "fragment.cuh"
#include "pipeline.cuh"

namespace fa3lite { namespace attn { namespace bwd {

__device__ __forceinline__ void add_dq_tile(float* dst, int wg, int tid, const float (&dq)[kDqN / 2]) {
  float* base = dst + (wg * kDqChunks * kWarpgroupThreads + tid) * 4;
#pragma unroll
  for (int j = 0; j < kDqChunks; ++j) {
    gmem::red_add_v4_f32(base + j * kWarpgroupThreads * 4, dq[4 * j], dq[4 * j + 1], dq[4 * j + 2], dq[4 * j + 3]);
  }
}

// This warpgroup's dQ tile of query block m into the global f32 accumulator; in deterministic mode
// in the fixed key-block order of bwd_scheduler.cuh, when the turn keeper says the turn has come
// (bwd_dq.cuh). The additions are only issued here: the keeper waits for them, not the warpgroup.
__device__ __forceinline__ void add_dq(const BwdParams& p, int bh, int m, int wg, int tid,
                                       const float (&dq)[kDqN / 2]) {
  if (p.deterministic) named_barrier::sync(dq_turn_barrier(wg), kDqTurnThreads);
  add_dq_tile(p.dq_accum + dq_block(p, bh, m) * kDqBlockFloats, wg, tid, dq);
  if (p.deterministic) named_barrier::arrive(dq_added_barrier(wg), kDqTurnThreads);
}

// Tile t, the CTA's n-th; pos: the Q/dO ring, carried from tile to tile (as in bwd_consumer).
__device__ __forceinline__ void bwd_consumer_wide(const BwdParams& p, const BwdSmem& sm, const BwdTile& t, int wg,
                                                  int tid, RingPos<kStages>& pos, int n) {
  float dv[kWgCols / 2];   // dK/dV accumulators; never touched (so never allocated) without kNeedDkv
  float dk[kWgCols / 2];
#pragma unroll
  for (int i = 0; i < kWgCols / 2; ++i) {
    dv[i] = 0.f;
    dk[i] = 0.f;
  }
  const int rb = frag::row_base(tid);
  const int key0 = t.n_block * kBlockN;
  const int q_col0 = wg * kWgQueries;                                  // this warpgroup's query columns
  const u32 col_blk = wg * (kWgCols / kSwizzleCols);                  // its first 64-column block

  mbar::wait(sm.kv_full(), n & 1);   // a tile with no query block: completed without loads
  int buf = 0;
  for (int bh = first_pair(p, t), left = tile_heads(t); left > 0; ++bh, --left)
  for (int v = visit_first(t); v < t.m_end; ++v) {
    const int m = query_block(t, v);
    const int s = pos.stage;
    float st[kWgQueries / 2];    // S^T, then P^T
    float dpt[kWgQueries / 2];   // dP^T, then dS^T

    const u32 lse_row = stat_at(sm.lse(s), q_col0);   // this warpgroup's query columns
    const u32 dps_row = stat_at(sm.dps(s), q_col0);
    mbar::wait(sm.q_full(s), pos.phase);
    float lse[kWgQueries / 4];
    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk) {
      wgmma::mma<kWgQueries, Element>::template ss<0, 0>(
          st, kmajor_desc(sm.k(), kBlockN, kk), kmajor_desc(sm.q(s) + q_col0 * kRowBytes, kBlockM, kk), kk > 0);
    }
    wgmma::commit_group();
    mbar::wait(sm.do_full(s), pos.phase);
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk) {
      wgmma::mma<kWgQueries, Element>::template ss<0, 0>(
          dpt, kmajor_desc(sm.v(), kBlockN, kk), kmajor_desc(sm.dout(s) + q_col0 * kRowBytes, kBlockM, kk), kk > 0);
    }
    wgmma::commit_group();
    // LSE (came with Q) read after both wgmma groups are issued, not ahead of them: the dO wait's
    // mbarrier probe queued behind these loads (as at 128-query steps, bwd_softmax.cuh kLseAfterDpt;
    // full masks +1.0..1.7%, causal within noise, benchmarks/RESULTS.md section 32).
    if constexpr (kLseInStep1) load_row_stats<kWgQueries>(lse_row, tid, lse);

    wgmma::wait_group<1>();
    fence_regs(st);
    float dps[kWgQueries / 4];   // in flight during the exp2s, as in bwd_consumer.cuh
    if constexpr (!kSoftcap) load_row_stats<kWgQueries>(dps_row, tid, dps);
    probs_transposed<kWgQueries>(st, p, t.mask, lse, tid, needs_mask(t.mask, key0, m), key0 + rb, m * kBlockM + q_col0);
    wgmma::wait_group<0>();
    fence_regs(dpt);
    dscores_transposed<kWgQueries>(st, dpt, dps, p, tid, lse_row, dps_row);
    if constexpr (!kNeedDkv) {
      // Q, dO and the stats of this stage are no longer read: the dQ wgmma reads sdS and K only.
      release_stage(sm.empty(s));
    }
    u32 dsf[kWgQueries / 16][4];
    pack_fragments<kWgQueries>(dpt, dsf);
    stmatrix_fragments<kWgQueries>(sm.ds(buf), 0, q_col0, tid, dsf);
    if constexpr (kNeedDkv) {
      u32 pf[kWgQueries / 16][4];
      pack_fragments<kWgQueries>(st, pf);
      stmatrix_fragments<kWgQueries>(sm.p(buf), 0, q_col0, tid, pf);
    }
    fence::proxy_async_smem();
    named_barrier::sync(static_cast<u32>(NamedBarrier::kDsFull), kConsumerThreads);

    float dq[kDqN / 2];
    wgmma::fence();
    if constexpr (kNeedDkv) {
      const u32 dout_cols = sm.dout(s) + col_blk * kBlockM * kRowBytes;
      const u32 q_cols = sm.q(s) + col_blk * kBlockM * kRowBytes;
#pragma unroll
      for (int kk = 0; kk < kBlockM / 16; ++kk) {
        wgmma::mma<kWgCols, Element>::template ss<0, 1>(dv, kmajor_desc(sm.p(buf), kBlockN, kk),
                                                        mnmajor_desc(dout_cols, kBlockM, kk), 1);
      }
#pragma unroll
      for (int kk = 0; kk < kBlockM / 16; ++kk) {
        wgmma::mma<kWgCols, Element>::template ss<0, 1>(dk, kmajor_desc(sm.ds(buf), kBlockN, kk),
                                                        mnmajor_desc(q_cols, kBlockM, kk), 1);
      }
    }
    if constexpr (kNeedDq) {
      const u32 k_cols = sm.k() + col_blk * kBlockN * kRowBytes;
#pragma unroll
      for (int kk = 0; kk < kBlockN / 16; ++kk) {
        wgmma::mma<kDqN, Element>::template ss<1, 1>(dq, mnmajor_desc(sm.ds(buf), kBlockN, kk),
                                                     mnmajor_desc(k_cols, kBlockN, kk), kk > 0);
      }
    }
    wgmma::commit_group();
    wgmma::wait_group<0>();
    if constexpr (kNeedDq) fence_regs(dq);
    if constexpr (kNeedDkv) {
      fence_regs(dv);
      fence_regs(dk);
      // Q and dO of this stage are no longer read (the dV/dK wgmmas that read them completed).
      release_stage(sm.empty(s));
    }

    if constexpr (kNeedDq) add_dq(p, bh, m, wg, tid, dq);

    buf ^= 1;
    pos.advance();
  }
  bwd_end_tile(p, sm, t, 0, wg * kWgCols, wg, tid, dk, dv);
}

}}}  // namespace fa3lite::attn::bwd
