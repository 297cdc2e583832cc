// Consumer warpgroup wg (0 or 1) of the backward kernel: key rows [64 wg, 64 wg + 64) of the CTA's
// key block, against every query block m that can see them. Per query block (ring stage s):
//
//   S^T  = K_wg Q^T          SS wgmma m64n64, A = K rows (K-major), B = Q tile (K-major)
//   dP^T = V_wg dO^T         SS wgmma m64n64
//   P^T  = exp2(S^T * scale_log2 - lse_log2[query])       (masked entries 0)
//   dS^T = P^T * (dP^T - dPsum[query])
//   dV  += P^T dO            RS wgmma m64nD, A = P^T straight from the S^T registers (same layout),
//                            B = dO tile read MN-major (trans-b)
//   dK  += dS^T Q            RS wgmma m64nD, B = Q tile MN-major
//   dQ   = dS K              dS^T goes to smem [key row][query]; that is dS stored M-major, so the
//                            SS wgmma reads it with trans-a and K with trans-b (both MN-major)
//
// The accumulators' columns are query rows here, so each thread needs LSE/dPsum per column: 8
// float2 loads each from the stage's smem copy. Rows past seqlen_q need no mask: their Q/dO rows
// arrive as zeros, their lse_log2 is +inf (P = 0) and their dPsum 0. Keys past seqlen_k and causal
// exclusions are masked explicitly (a zero K row would still give P = exp2(-lse) != 0).
//
// dS^T buffers: with the column-split dQ (D = 128) each warpgroup's dQ reads both warpgroups' rows,
// so the tile is double-buffered: block m + 2 rewrites buffer m % 2 only after both warpgroups passed
// the kDsFull barrier of block m + 1, which each reaches after its dQ wgmma of block m completed.
// With the row-split dQ (D = 64) a warpgroup reads only its own rows and one buffer suffices.
#pragma once
#include "../ptx/math.cuh"
#include "../ptx/mbarrier.cuh"
#include "../ptx/smem.cuh"
#include "../ptx/smem_vec.cuh"
#include "../ptx/sync.cuh"
#include "../ptx/wgmma.cuh"
#include "bwd_dq.cuh"
#include "bwd_epilogue.cuh"
#include "bwd_scheduler.cuh"
#include "bwd_smem.cuh"
#include "fragment.cuh"
#include "pipeline.cuh"

namespace fa3lite { namespace attn { namespace bwd {

constexpr u32 kAtomBytes = 1024;   // 8 rows x 128 bytes: one 128B-swizzle atom

// K-major operand of a [D/64][rows][64] tile starting at `tile` (which may be offset by whole rows):
// k16 step kk is +32 bytes inside a 64-column block and +rows*128 per block.
__device__ __forceinline__ u64 kmajor_desc(u32 tile, int rows, int kk) {
  return wgmma::desc_sw128(tile + (kk / 4) * rows * kRowBytes + (kk % 4) * 32, 16, kAtomBytes);
}

// MN-major operand: the K dimension runs down the rows (16 rows per k16 step), the M/N dimension along
// the 64-column blocks, LBO = rows*128 apart.
__device__ __forceinline__ u64 mnmajor_desc(u32 tile, int rows, int kk) {
  return wgmma::desc_sw128(tile + kk * 16 * kRowBytes, rows * kRowBytes, kAtomBytes);
}

template <int N>
__device__ __forceinline__ void fence_regs(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) fence::reg(r[i]);
}

// Keys of this warpgroup that some query of block m must not see (past seqlen_k or causal).
__device__ __forceinline__ bool needs_mask(const BwdParams& p, int key0, int m) {
  const int last_key = key0 + kWgKeys - 1;
  const bool tail = last_key >= p.seqlen_k;
  const bool diag = kIsCausal && static_cast<i64>(last_key) > static_cast<i64>(m) * kBlockM + p.causal_offset;
  return tail || diag;
}

__device__ __forceinline__ void bwd_consumer(const BwdParams& p, const BwdSmem& sm, const BwdTile& t, int wg,
                                             int tid) {
  float dv[kHeadDim / 2];
  float dk[kHeadDim / 2];
#pragma unroll
  for (int i = 0; i < kHeadDim / 2; ++i) {
    dv[i] = 0.f;
    dk[i] = 0.f;
  }
  const int rb = frag::row_base(tid);
  const int cb = frag::col_base(tid);
  const int key0 = t.n_block * kBlockN + wg * kWgKeys;   // first key row of this warpgroup
  const u32 k_wg = sm.k() + wg * kWgKeys * kRowBytes;
  const u32 v_wg = sm.v() + wg * kWgKeys * kRowBytes;
  // stmatrix address pattern of dS^T: lane l gives row 16 w + l % 16 of this warpgroup's rows and
  // the 8-column half l / 16 of each 16-column block.
  const int lane = tid % 32;
  const u32 ds_row_byte = (wg * kWgKeys + 16 * (tid / 32) + lane % 16) * kRowBytes + (lane / 16) * 16;

  if (t.m_begin < t.m_end) mbar::wait(sm.kv_full(), 0);
  RingPos<kStages> pos;
  int ds_buf = 0;
  for (int m = t.m_begin; m < t.m_end; ++m) {
    const int s = pos.stage;
    float st[kBlockM / 2];    // S^T, then P^T
    float dpt[kBlockM / 2];   // dP^T, then dS^T

    mbar::wait(sm.q_full(s), pos.phase);
    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk) {
      wgmma::mma<kBlockM, Element>::template ss<0, 0>(st, kmajor_desc(k_wg, kBlockN, kk),
                                                      kmajor_desc(sm.q(s), kBlockM, kk), kk > 0);
    }
    wgmma::commit_group();
    mbar::wait(sm.do_full(s), pos.phase);
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk) {
      wgmma::mma<kBlockM, Element>::template ss<0, 0>(dpt, kmajor_desc(v_wg, kBlockN, kk),
                                                      kmajor_desc(sm.dout(s), kBlockM, kk), kk > 0);
    }
    wgmma::commit_group();

    // P^T = exp2(S^T * scale_log2 - lse_log2[query]).
    wgmma::wait_group<1>();
    fence_regs(st);
    const bool masked = needs_mask(p, key0, m);
    const int q0 = m * kBlockM + cb;
#pragma unroll
    for (int j = 0; j < kBlockM / 8; ++j) {
      float l0, l1;
      smem_vec::ld_v2_f32(sm.lse(s) + (8 * j + cb) * 4, l0, l1);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = 4 * j + e;
        float pv = math::ex2(fmaf(st[i], p.scale_log2, -((e & 1) ? l1 : l0)));
        if (masked) {
          const int key = key0 + rb + 8 * frag::half(i);
          const int query = q0 + frag::col(i);
          bool hidden = key >= p.seqlen_k;
          if (kIsCausal) hidden = hidden || static_cast<i64>(key) > static_cast<i64>(query) + p.causal_offset;
          if (hidden) pv = 0.f;
        }
        st[i] = pv;
      }
    }

    // dS^T = P^T * (dP^T - dPsum[query]).
    wgmma::wait_group<0>();
    fence_regs(dpt);
#pragma unroll
    for (int j = 0; j < kBlockM / 8; ++j) {
      float d0, d1;
      smem_vec::ld_v2_f32(sm.dpsum(s) + (8 * j + cb) * 4, d0, d1);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = 4 * j + e;
        dpt[i] = st[i] * (dpt[i] - ((e & 1) ? d1 : d0));
      }
    }

    // A fragments of k16 step kk = accumulators 8kk..8kk+7 packed pairwise (also stmatrix's order).
    u32 pa[kBlockM / 16][4];
    u32 dsa[kBlockM / 16][4];
#pragma unroll
    for (int kk = 0; kk < kBlockM / 16; ++kk) {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        pa[kk][r] = math::pack(st[8 * kk + 2 * r], st[8 * kk + 2 * r + 1], Element{});
        dsa[kk][r] = math::pack(dpt[8 * kk + 2 * r], dpt[8 * kk + 2 * r + 1], Element{});
      }
    }

    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < kBlockM / 16; ++kk) {
      wgmma::mma<kHeadDim, Element>::template rs<1>(dv, pa[kk], mnmajor_desc(sm.dout(s), kBlockM, kk), 1);
    }
#pragma unroll
    for (int kk = 0; kk < kBlockM / 16; ++kk) {
      wgmma::mma<kHeadDim, Element>::template rs<1>(dk, dsa[kk], mnmajor_desc(sm.q(s), kBlockM, kk), 1);
    }
    wgmma::commit_group();

    // dS^T to shared memory (overlaps the dV/dK wgmmas, which only read these registers).
    const u32 ds_tile = sm.ds(ds_buf);
#pragma unroll
    for (int j = 0; j < kBlockM / 16; ++j) {
      u32 byte = ds_row_byte + j * 32;
      byte ^= ((byte >> 7) & 7u) << 4;
      smem::stmatrix_x4(ds_tile + byte, dsa[j][0], dsa[j][1], dsa[j][2], dsa[j][3]);
    }
    fence::proxy_async_smem();
    if (kDqSplitCols) {
      named_barrier::sync(static_cast<u32>(NamedBarrier::kDsFull), kConsumerThreads);
    } else if (wg == 0) {
      named_barrier::sync(static_cast<u32>(NamedBarrier::kDsWg0), kWarpgroupThreads);
    } else {
      named_barrier::sync(static_cast<u32>(NamedBarrier::kDsWg1), kWarpgroupThreads);
    }

    // dQ tile: columns [64 wg, 64 wg + 64) over all keys, or all columns over this warpgroup's keys.
    float dq[kDqN / 2];
    const int dq_row0 = kDqSplitCols ? 0 : wg * kWgKeys;
    const u32 ds_a = ds_tile + dq_row0 * kRowBytes;
    const u32 k_b = sm.k() + (kDqSplitCols ? wg * kBlockN * kRowBytes : 0) + dq_row0 * kRowBytes;
    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < kDqWgmmaK / 16; ++kk) {
      wgmma::mma<kDqN, Element>::template ss<1, 1>(dq, mnmajor_desc(ds_a, kBlockN, kk),
                                                   mnmajor_desc(k_b, kBlockN, kk), kk > 0);
    }
    wgmma::commit_group();
    wgmma::wait_group<0>();
    fence_regs(dq);
    fence_regs(dv);
    fence_regs(dk);

    // Q, dO, LSE and dPsum of this stage are no longer read (the generic LSE/dPsum reads are ordered
    // before the next TMA write by the proxy fence).
    fence::proxy_async_smem();
    if (tid % 32 == 0) mbar::arrive(sm.empty(s));

    if (m > t.m_begin) named_barrier::sync(static_cast<u32>(NamedBarrier::kDqEmpty), kDqSyncThreads);
    store_dq_tile(sm, kDqSplitCols ? 0 : wg, kDqSplitCols ? wg : 0, tid, dq);
    fence::proxy_async_smem();
    named_barrier::arrive(static_cast<u32>(NamedBarrier::kDqFull), kDqSyncThreads);

    if (kDsBuffers == 2) ds_buf ^= 1;
    pos.advance();
  }
  bwd_store_dkv(p, t, wg, tid, dk, dv);
}

}}}  // namespace fa3lite::attn::bwd
