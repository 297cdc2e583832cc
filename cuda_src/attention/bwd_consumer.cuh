// Narrow consumer (D <= 128), warpgroup wg (0 or 1) of the backward kernel: key rows [64 wg, 64 wg + 64) of the CTA's
// key block, against every query block m that can see them. Per query block (ring stage s):
//
//   S^T  = K_wg Q^T          SS wgmma m64nM (M = kBlockM queries), A = K rows (K-major), B = Q tile (K-major)
//   dP^T = V_wg dO^T         SS wgmma m64nM
//   P^T  = exp2(S^T * scale_log2 - lse_log2[query])       (masked entries 0)
//   dS^T = P^T * (dP^T - dPsum[query])
//   dV  += P^T dO            RS wgmma m64nD, A = P^T straight from the S^T registers (same layout),
//                            B = dO tile read MN-major (trans-b); issued before dP^T is waited for
//                            (kEarlyDv: not with softcap, whose P^T comes with dS^T)
//   dK  += dS^T Q            RS wgmma m64nD, B = Q tile MN-major; issued after dQ's (kDkAfterDq)
//   dQ   = dS K              dS^T goes to smem [key row][query]; that is dS stored M-major, so the
//                            SS wgmma reads it with trans-a and K with trans-b (both MN-major).
//                            Which part of dQ a warpgroup computes: bwd_config.cuh (kDqSplitRows,
//                            kDqSplitCols, else a partial over its own keys)
//
// The accumulators' columns are query rows here, so each thread needs LSE/dPsum per column:
// kBlockM/8 float2 loads each from the stage's stats rows in shared memory (bwd_softmax.cuh). Rows
// past seqlen_q need no mask: their Q/dO rows arrive as zeros, their lse_log2 is +inf (P = 0) and
// their dPsum 0. Keys past seqlen_k and causal exclusions are masked explicitly (a zero K row would
// still give P = exp2(-lse) != 0).
//
// dS^T buffers: when a dQ tile sums over all keys (kDqAllKeys) each warpgroup's dQ reads both
// warpgroups' rows, so the tile is double-buffered: block m + 2 rewrites buffer m % 2 only after both
// warpgroups passed the kDsFull barrier of block m + 1, which each reaches after its dQ wgmma of
// block m completed. 128-query steps keep one buffer (their 32 KB went to a third ring stage,
// bwd_config.cuh kThreeStages): a warpgroup writes its rows of block m + 1 once the other one
// announced (kDsReadWg) that its dQ wgmma of block m completed. With the partial dQ a warpgroup
// reads only its own rows and one buffer suffices.
//
// Variants (bwd_config.cuh): without dK/dV the dV/dK wgmmas, P^T's A fragments and the dK/dV
// registers go, and the stage is released once dS^T is formed (dQ reads neither Q, dO nor the stats);
// without dQ the dS^T stmatrix, its barriers, the dQ wgmma and the hand-off to the writer warp go
// (the writer warp does not run, so kDqEmpty/kDqFull have no participant left). Either way each
// consumer thread arrives on empty(s) exactly once per query block.
#pragma once
#include "../ptx/math.cuh"
#include "../ptx/mbarrier.cuh"
#include "../ptx/smem.cuh"
#include "../ptx/sync.cuh"
#include "../ptx/wgmma.cuh"
#include "bwd_dq.cuh"
#include "bwd_mma.cuh"
#include "bwd_epilogue.cuh"
#include "bwd_scheduler.cuh"
#include "bwd_smem.cuh"
#include "bwd_softmax.cuh"
#include "fragment.cuh"
#include "pipeline.cuh"
#include "trace.cuh"

namespace fa3lite { namespace attn { namespace bwd {

// dK's wgmma goes after dQ's: groups complete in order, so the warpgroup waits for dQ alone and
// stores it while dK runs (the tensor pipe is otherwise idle for the store). Not with softcap: D =
// 128 causal then spills. Without dQ, or with softcap, dK goes out right after dV.
constexpr bool kDkAfterDq = kNeedDq && kNeedDkv && !kSoftcap;
// One dS^T buffer that both warpgroups' dQ wgmmas read (see the top).
constexpr bool kDsSharedOnce = kNeedDq && kDqAllKeys && kDsBuffers == 1;

// dK += dS^T Q: RS wgmmas, A = dS^T's packed registers, B = the stage's Q tile read MN-major.
__device__ __forceinline__ void issue_dk(float (&dk)[kWgCols / 2], const u32 (&dsa)[kBlockM / 16][4], u32 q_tile) {
#pragma unroll
  for (int kk = 0; kk < kBlockM / 16; ++kk) {
    wgmma::mma<kWgCols, Element>::template rs<1>(dk, dsa[kk], mnmajor_desc(q_tile, kBlockM, kk), 1);
  }
  wgmma::commit_group();
}

// Tile t, the CTA's n-th (bwd_scheduler.cuh for_each_tile, index idx). pos: the Q/dO ring, carried
// from tile to tile.
__device__ __forceinline__ void bwd_consumer(const BwdParams& p, const BwdSmem& sm, const BwdTile& t, int wg,
                                             int tid, RingPos<kStages>& pos, int n, unsigned idx) {
  float dv[kWgCols / 2];   // dK/dV accumulators; never touched (so never allocated) without kNeedDkv
  float dk[kWgCols / 2];
#pragma unroll
  for (int i = 0; i < kWgCols / 2; ++i) {
    dv[i] = 0.f;
    dk[i] = 0.f;
  }
  const int rb = frag::row_base(tid);
  const int key0 = t.n_block * kBlockN + wg * kWgKeys;   // first key row of this warpgroup
  const u32 k_wg = sm.k() + wg * kWgKeys * kRowBytes;
  const u32 v_wg = sm.v() + wg * kWgKeys * kRowBytes;
  mbar::wait(sm.kv_full(), n & 1);   // a tile with no query block: completed without loads
  int ds_buf = 0;
  // Visit v of head h is the tile's visit w = h * (m_end - visit_first) + v - visit_first (the walk of
  // bwd_scheduler.cuh), computed where needed (no counter held through the loop).
  for (int h = 0; h < tile_heads(t); ++h)
  for (int v = visit_first(t); v < t.m_end; ++v) {
    const int m = query_block(t, v);
    const bool first_visit = h == 0 && v == visit_first(t);
    const int s = pos.stage;
    float st[kBlockM / 2];    // S^T, then P^T
    float dpt[kBlockM / 2];   // dP^T, then dS^T

    trace::wait(idx, 0, sm.q_full(s), pos.phase);
    if (wg == 0 && tid == 0 && first_visit) trace::mark(idx, 2);
    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk) {
      wgmma::mma<kBlockM, Element>::template ss<0, 0>(st, kmajor_desc(k_wg, kBlockN, kk),
                                                      kmajor_desc(sm.q(s), kBlockM, kk), kk > 0);
    }
    wgmma::commit_group();
    // LSE of the block's query columns (it came with Q), read while the S^T/dP^T wgmmas run: here at
    // 64-query steps, after the dP^T wgmmas at 128 (kLseAfterDpt).
    float lse[kBlockM / 4];
    if constexpr (kLseInStep1 && !kLseAfterDpt) load_row_stats<kBlockM>(sm.lse(s), tid, lse);
    trace::wait(idx, 1, sm.do_full(s), pos.phase);
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk) {
      wgmma::mma<kBlockM, Element>::template ss<0, 0>(dpt, kmajor_desc(v_wg, kBlockN, kk),
                                                      kmajor_desc(sm.dout(s), kBlockM, kk), kk > 0);
    }
    wgmma::commit_group();
    if constexpr (kLseInStep1 && kLseAfterDpt) load_row_stats<kBlockM>(sm.lse(s), tid, lse);

    // P^T and dS^T in registers (bwd_softmax.cuh), packed as A fragments.
    wgmma::wait_group<1>();
    fence_regs(st);
    // dPsum (it came with dO, whose barrier this thread passed) read after S^T is done (fewer live
    // registers while the wgmmas run) but before P^T, so the loads are in flight during the exp2s.
    float dps[kBlockM / 4];
    if constexpr (!kSoftcap) load_row_stats<kBlockM>(sm.dps(s), tid, dps);
    probs_transposed<kBlockM, !kEarlyDv>(st, p, t.mask, lse, tid, needs_mask(t.mask, key0, m), key0 + rb,
                                         m * kBlockM);
    if constexpr (kEarlyDv) {
      // dV += P^T dO goes out before the wait for dP^T: the exp2s then have to finish while the
      // dP^T wgmma runs (ptxas otherwise sinks them below the wait), and the tensor pipe has dV's
      // work while dS^T is formed. Each k-step goes out as soon as its 16 query columns' exp2s are
      // done, so the tensor pipe, which runs out of dP^T work while MUFU is still busy, gets dV's
      // first steps during the exp2s of the later ones.
      u32 pa[kBlockM / 16][4];
#pragma unroll
      for (int kk = 0; kk < kBlockM / 16; ++kk) {
        exp2_step<kBlockM>(st, kk);
        pack_fragment<kBlockM>(st, kk, pa[kk]);
        wgmma::fence();
        wgmma::mma<kWgCols, Element>::template rs<1>(dv, pa[kk], mnmajor_desc(sm.dout(s), kBlockM, kk), 1);
      }
      wgmma::commit_group();
      wgmma::wait_group<1>();   // dP^T; dV may still run
    } else {
      wgmma::wait_group<0>();
    }
    fence_regs(dpt);
    dscores_transposed<kBlockM>(st, dpt, dps, p, tid, sm.lse(s), sm.dps(s));
    if constexpr (!kNeedDkv) {
      // Q, dO and the stats of this stage are no longer read: the dQ wgmma reads dS^T and K only.
      release_stage(sm.empty(s));
    }
    u32 dsa[kBlockM / 16][4];
    pack_fragments<kBlockM>(dpt, dsa);

    if constexpr (kNeedDkv) {
      wgmma::fence();
      if constexpr (!kEarlyDv) {   // 128-query steps, softcap: dV after dS^T (see kEarlyDv)
        u32 pa[kBlockM / 16][4];
        pack_fragments<kBlockM>(st, pa);
#pragma unroll
        for (int kk = 0; kk < kBlockM / 16; ++kk) {
          wgmma::mma<kWgCols, Element>::template rs<1>(dv, pa[kk], mnmajor_desc(sm.dout(s), kBlockM, kk), 1);
        }
        wgmma::commit_group();
      }
      if constexpr (!kDkAfterDq) issue_dk(dk, dsa, sm.q(s));
    }

    if constexpr (kNeedDq) {
      // dS^T to shared memory (overlaps the dV wgmma, which only reads P^T's registers). One buffer
      // over all keys: the other warpgroup's dQ wgmma of the block before must have read it.
      const u32 ds_tile = sm.ds(ds_buf);
      if (kDsSharedOnce && !first_visit) {
        named_barrier::sync(static_cast<u32>(wg == 0 ? NamedBarrier::kDsReadWg1 : NamedBarrier::kDsReadWg0),
                            kConsumerThreads);
      }
      stmatrix_fragments<kBlockM>(ds_tile, wg * kWgKeys, 0, tid, dsa);
      fence::proxy_async_smem();
      if (kDqAllKeys) {
        named_barrier::sync(static_cast<u32>(NamedBarrier::kDsFull), kConsumerThreads);
      } else if (wg == 0) {
        named_barrier::sync(static_cast<u32>(NamedBarrier::kDsWg0), kWarpgroupThreads);
      } else {
        named_barrier::sync(static_cast<u32>(NamedBarrier::kDsWg1), kWarpgroupThreads);
      }

      // dQ tile: queries [64 wg, 64 wg + 64) or columns [64 wg, 64 wg + 64) over all keys, or the
      // whole block over this warpgroup's keys. dS^T's 64-query column blocks are kBlockN rows apart.
      const int key_row0 = kDqAllKeys ? 0 : wg * kWgKeys;
      const u32 ds_a = ds_tile + (kDqSplitRows ? wg * kBlockN * kRowBytes : 0) + key_row0 * kRowBytes;
      const u32 k_b = sm.k() + (kDqSplitCols ? wg * (kDqN / kSwizzleCols) * kBlockN * kRowBytes : 0) +
                      key_row0 * kRowBytes;
      float dq[kDqN / 2];
      wgmma::fence();
#pragma unroll
      for (int kk = 0; kk < kDqWgmmaK / 16; ++kk) {
        wgmma::mma<kDqN, Element>::template ss<1, 1>(dq, mnmajor_desc(ds_a, kBlockN, kk),
                                                     mnmajor_desc(k_b, kBlockN, kk), kk > 0);
      }
      wgmma::commit_group();
      if constexpr (kDkAfterDq) issue_dk(dk, dsa, sm.q(s));
      wgmma::wait_group<kDkAfterDq ? 1 : 0>();   // dQ (dK may still run)
      fence_regs(dq);
      if (kDsSharedOnce && (v + 1 < t.m_end || h + 1 < tile_heads(t))) {
        named_barrier::arrive(static_cast<u32>(wg == 0 ? NamedBarrier::kDsReadWg0 : NamedBarrier::kDsReadWg1),
                              kConsumerThreads);
      }
      // dQ tile to smem for the writer warp of its buffer (bwd_dq.cuh); the buffers alternate, and each
      // warpgroup hands its part over on barriers of its own. (kDqBuffers is 1 or 2 here; a D = 256
      // kernel compiles this consumer with none, never calling it.)
      const int w = h * (t.m_end - visit_first(t)) + v - visit_first(t);
      const int dq_buf = kDqBuffers == 2 ? w % 2 : 0;
      if (wg == 0) {
        hand_dq_tile<0>(sm, dq_buf, tid, dq);
      } else {
        hand_dq_tile<1>(sm, dq_buf, tid, dq);
      }
      if (kDsBuffers == 2) ds_buf ^= 1;
    }
    if constexpr (kNeedDkv) {
      wgmma::wait_group<0>();
      fence_regs(dv);
      fence_regs(dk);
      // Q and dO of this stage are no longer read (the dV/dK wgmmas that read them completed).
      release_stage(sm.empty(s));
    }
    if (wg == 0 && tid == 0 && first_visit) trace::mark(idx, 6);
    pos.advance();
  }
  if (wg == 0 && tid == 0) trace::mark(idx, 3);
  bwd_end_tile(p, sm, t, wg * kWgKeys, 0, wg, tid, dk, dv);
}

}}}  // namespace fa3lite::attn::bwd
