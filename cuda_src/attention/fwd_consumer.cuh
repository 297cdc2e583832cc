// Consumer warpgroup: 64 query rows of the tile against every visible key block.
//
// With kOverlap, a software pipeline inside the warpgroup (FA3's intra-warpgroup overlap): while the tensor cores run
// S(n) = Q K(n)^T and O += P(n+1) V(n+1), the warpgroup waits only for S(n) and does its softmax, so
// the exp2 work of one block hides under the P.V GEMM of the previous one. Blocks go from the last
// key block to the first (see the producer). With kPingpong the consumer warpgroups also take turns
// issuing their GEMMs (pingpong.cuh). Per iteration:
//   issue S = Q K(n)^T; issue O += P V(prev); wait S -> release K(n) -> softcap/mask -> softmax(S) -> corr
//   wait P.V -> O *= corr (skipped while no offset moved: softmax.cuh) -> release V(prev) -> P = bf16(S)
// O's rescale waits for the P.V in flight (it reads O), which is why corr is applied after it:
// O_new = (O + P_prev V_prev) * corr, with P_prev taken against the max before block n.
#pragma once
#include "../ptx/mbarrier.cuh"
#include "../ptx/smem_vec.cuh"
#include "../ptx/wgmma.cuh"
#include "fwd_epilogue.cuh"
#include "fwd_mma.cuh"
#include "mask.cuh"
#include "pingpong.cuh"
#include "pipeline.cuh"
#include "softmax.cuh"
#include "trace.cuh"

namespace fa3lite { namespace attn {

// One arrival per consumer warp (lane 0, after the warp's wgmma wait): empty barriers count kConsumerWarps.
__device__ __forceinline__ void release(u32 bar, int tid) {
  if (tid % 32 == 0) mbar::arrive(bar);
}

__device__ __forceinline__ void scale_rows(float (&o)[kHeadDim / 2], const float (&corr)[2]) {
#pragma unroll
  for (int i = 0; i < kHeadDim / 2; ++i) o[i] *= corr[frag::half(i)];
}

// O *= corr row-wise, skipped (warp-uniformly) when no row of the warp moved its offset.
__device__ __forceinline__ void rescale_o(float (&o)[kHeadDim / 2], const float (&corr)[2], bool needed) {
  if (warp::any(needed)) scale_rows(o, corr);
}

// The same after waiting for the P.V GEMM in flight (it accumulates into O). The wait has to come
// after the softmax's exp2s, which run under that GEMM; in the softmax's basic block ptxas hoists it
// (WARPGROUP.DEPBAR) to the block's top, and every exp2 then ran after P.V. A branch ends that block
// after the exp2s and puts the wait in each arm. Its condition, on the row offsets (known before the
// exp2s, so the branch waits for none of them), is always true -- the hardware never makes a float
// of all ones (its NaN is 0x7fffffff) -- so every warp takes the same arm: wgmma.wait_group is
// .aligned, all warps of a warpgroup must run the same instance (a per-warp vote as the condition,
// as before, broke that: synccheck's "mismatching warpgroup instruction pc between warps"; a
// condition on the row sums waited for the last exp2 and cost 3%).
__device__ __forceinline__ void wait_pv_rescale_o(float (&o)[kHeadDim / 2], const float (&corr)[2], bool needed,
                                                  const float (&row_max)[2]) {
  constexpr u32 kNoFloat = 0xffffffffu;
  if ((__float_as_uint(row_max[0]) & __float_as_uint(row_max[1])) != kNoFloat) {
    wgmma::wait_group<0>();
  } else {
    wgmma::wait_group<0>();
  }
  rescale_o(o, corr, needed);
}

// Key block n's scores, waited for at once: S = Q K^T, release K, mask, softmax (S becomes P).
// Gives the factors O's rows must be scaled by; returns whether any differs from 1.
__device__ __forceinline__ bool scores_now(const FwdParams& p, const FwdSmem& sm, const Mask& mask, u32 q_wg, int n,
                                           const RingPos<kStages>& pos, int tid, const Pingpong& pp, OnlineSoftmax& softmax, float (&s)[kBlockN / 2],
                                           float (&corr)[2]) {
  mbar::wait(sm.k_full(pos.stage), pos.phase);
  pp.wait();
  gemm_qk(s, q_wg, sm.k(pos.stage));
  pp.pass();
  wgmma::wait_group<0>();
  release(sm.k_empty(pos.stage), tid);
  mask.mod<kBlockN>(s, n, p.softcap_scale);
  return softmax.update<kBlockN>(s, p.scale_log2, corr);
}

// kSplit: the rows of key block n's V past the sequence's end (from `first_row` on) hold what follows
// it in the tensor (kPaged: what the last page, or an earlier block for chunks never loaded, left
// there); P is 0 there, but 0 * NaN is NaN, so they are zeroed before the P.V GEMM reads the stage.
// Only the band's last block can hold such rows.
// The stores are generic-proxy writes that wgmma reads through the async proxy: fence, then the
// warpgroup's barrier (one consumer warpgroup: config.cuh).
__device__ __forceinline__ void clear_v_tail(const FwdSmem& sm, const RingPos<kStages>& pos, int first_row, int tid) {
  if (first_row >= kBlockN) return;
  mbar::wait(sm.v_full(pos.stage), pos.phase);
  constexpr int kChunksPerRow = tile_io::kRowBytes / 16;
  const int per_block = (kBlockN - first_row) * kChunksPerRow;
  for (int i = tid; i < per_block * kColBlocks; i += kWarpgroupThreads) {
    const int blk = i / per_block;
    const int rem = i % per_block;
    // a whole 128-byte row is cleared, so the swizzle (a permutation within the row) does not matter
    smem_vec::st_v4_f32(sm.v(pos.stage) + (blk * kBlockN + first_row + rem / kChunksPerRow) * tile_io::kRowBytes +
                            (rem % kChunksPerRow) * 16, 0.f, 0.f, 0.f, 0.f);
  }
  fence::proxy_async_smem();
  named_barrier::sync(static_cast<u32>(NamedBarrier::kEpilogueWg0), kWarpgroupThreads);
}

// Serial schedule: each GEMM is waited for right away; only the other warpgroups overlap this one.
__device__ __forceinline__ void mainloop_serial(const FwdParams& p, const FwdSmem& sm, const Mask& mask, u32 q_wg,
                                                KeyBlocks kb, int tid, const Pingpong& pp, RingPos<kStages>& pos, OnlineSoftmax& softmax,
                                                float (&o)[kHeadDim / 2]) {
  for (int n = kb.end - 1; n >= kb.begin; --n) {
    float s[kBlockN / 2], corr[2];
    const bool moved = scores_now(p, sm, mask, q_wg, n, pos, tid, pp, softmax, s, corr);
    rescale_o(o, corr, moved);
    u32 pa[kBlockN / 16][4];
    convert_p(s, pa);
    if constexpr (kSplit) {
      if (n == kb.end - 1) clear_v_tail(sm, pos, mask.seqlen_k - n * kBlockN, tid);
    }
    mbar::wait(sm.v_full(pos.stage), pos.phase);
    pp.wait();
    gemm_pv(o, pa, sm.v(pos.stage));
    pp.pass();
    wgmma::wait_group<0>();
    release(sm.v_empty(pos.stage), tid);
    pos.advance();
  }
}

// Overlapped schedule (see the top of this file).
__device__ __forceinline__ void mainloop_overlapped(const FwdParams& p, const FwdSmem& sm, const Mask& mask,
                                                    u32 q_wg, KeyBlocks kb, int tid, const Pingpong& pp,
                                                    RingPos<kStages>& pos, OnlineSoftmax& softmax,
                                                    float (&o)[kHeadDim / 2]) {
  u32 pa[kBlockN / 16][4];
  {  // first block: nothing to overlap with yet, and O is zero: no rescale
    float s[kBlockN / 2], corr[2];
    scores_now(p, sm, mask, q_wg, kb.end - 1, pos, tid, pp, softmax, s, corr);
    convert_p(s, pa);
    if constexpr (kSplit) clear_v_tail(sm, pos, mask.seqlen_k - (kb.end - 1) * kBlockN, tid);
  }
  RingPos<kStages> prev = pos;   // the stage whose V pairs with the P in `pa`
  pos.advance();
  for (int n = kb.end - 2; n >= kb.begin; --n) {
    float s[kBlockN / 2];
    trace::wait(blockIdx.x, 0, sm.k_full(pos.stage), pos.phase);
    trace::wait(blockIdx.x, 1, sm.v_full(prev.stage), prev.phase);
    pp.wait();
    gemm_qk(s, q_wg, sm.k(pos.stage));
    gemm_pv(o, pa, sm.v(prev.stage));
    pp.pass();
    wgmma::wait_group<1>();                 // S is ready; P.V may still run
    release(sm.k_empty(pos.stage), tid);
    mask.mod<kBlockN>(s, n, p.softcap_scale);
    float corr[2];
    const bool moved = softmax.update<kBlockN>(s, p.scale_log2, corr);
    wait_pv_rescale_o(o, corr, moved, softmax.row_max);   // P.V done: O and pa may be touched again
    release(sm.v_empty(prev.stage), tid);
    convert_p(s, pa);
    prev = pos;
    pos.advance();
  }
  mbar::wait(sm.v_full(prev.stage), prev.phase);
  pp.wait();
  gemm_pv(o, pa, sm.v(prev.stage));
  pp.pass();
  wgmma::wait_group<0>();
  release(sm.v_empty(prev.stage), tid);   // pos is one past prev: where the next tile starts
}

// The tile after `idx` (kPersistent: scheduler.cuh; one tile per CTA otherwise).
__device__ __forceinline__ int next_tile(const FwdParams& p, int idx, int wg) {
  return kPersistent ? consumer_next_tile(p, idx, wg) : p.num_tiles;
}

// One tile: 64 query rows of this warpgroup against the tile's visible key blocks, then the epilogue.
// Returns the next tile's index, taken before the epilogue so that its load runs under it.
// q_round counts the CTA's tiles with visible keys (the parity of q_full / q_empty). idx: the tile's
// index, under which a trace build records its events (trace.cuh). pp: the CTA's pingpong round,
// which runs on through its tiles (pingpong.cuh).
__device__ __forceinline__ int consume_tile(const FwdParams& p, const FwdSmem& sm, int idx, int wg, int tid,
                                            const Pingpong& pp, RingPos<kStages>& pos, u32& q_round) {
  const Tile t = tile_of(p, idx);
  const unsigned unit = static_cast<unsigned>(idx);
  const Seq sq = seq_of(p, t.batch);
  if (kVarlen && t.m_block * kBlockM >= sq.seqlen_q) return next_tile(p, idx, wg);   // past the end: no work
  const KeyBlocks kb = key_blocks(p, sq, t);
  const bool tracer = wg == 0 && tid == 0;
  if (tracer) {
    trace::mark(unit, 1);
    trace::place(unit, kb.end - kb.begin);
  }
  float o[kHeadDim / 2];
#pragma unroll
  for (int i = 0; i < kHeadDim / 2; ++i) o[i] = 0.f;
  OnlineSoftmax softmax;
  softmax.init();

  const int wg_row0 = t.m_block * kBlockM + wg * 64;
  const Mask mask(sq.seqlen_k, sq.causal_offset, sq.local_offset, wg_row0, wg_row0 + frag::row_base(tid),
                  frag::col_base(tid), p.pack_group);
  const int q_slot = static_cast<int>(q_round % kQStages);   // this tile's Q buffer (if it has keys)
  const u32 q_wg = sm.q(q_slot) + wg * 64 * kRowBytes;

  const bool has_keys = kb.end > kb.begin;
  if (has_keys) {
    mbar::wait(sm.q_full(q_slot), (q_round / kQStages) & 1u);
    if (tracer) trace::mark(unit, 2);
    if constexpr (kOverlap) {
      mainloop_overlapped(p, sm, mask, q_wg, kb, tid, pp, pos, softmax, o);
    } else {
      mainloop_serial(p, sm, mask, q_wg, kb, tid, pp, pos, softmax, o);
    }
    // Every Q K^T wgmma of this warp has completed: unless O is staged in it, the Q buffer may take a
    // later tile's Q.
    if constexpr (kQFreeAfterGemms) release(sm.q_empty(q_slot), tid);
    ++q_round;
  }
  const int next = next_tile(p, idx, wg);
  if (tracer) trace::mark(unit, 3);
  float inv[2], lse[2];
  // A learnable sink adds exp(sink) to every row's denominator (log2 units here); with split keys
  // the combine adds it once, after the splits are merged.
  const bool partial = kSplit && p.num_splits > 1;
  const float sink_log2 = kSink && !partial ? p.sink[t.head] * math::kLog2e : math::neg_inf();
  softmax.finalize(p.scale_log2, sink_log2, inv, lse);
  fwd_epilogue(p, sm, t, sq, wg, tid, o, inv, lse, has_keys);
  if (tracer) trace::mark(unit, 4);
  return next;
}

__device__ __forceinline__ void fwd_consumer(const FwdParams& p, const FwdSmem& sm, int wg, int tid) {
  RingPos<kStages> pos;
  u32 q_round = 0;
  const Pingpong pp{wg};
  pp.start();
  if constexpr (kPersistent) {
#pragma unroll 1
    for (int idx = consumer_first_tile(p, wg); idx < p.num_tiles;) {
      idx = consume_tile(p, sm, idx, wg, tid, pp, pos, q_round);
    }
    if constexpr (kVarlenTiles) fill_gap_rows(p, wg * kWarpgroupThreads + tid, kConsumerWarpgroups * kWarpgroupThreads);
  } else {   // one tile per CTA: no loop state to keep live (it costs registers at the widest tiles)
    consume_tile(p, sm, static_cast<int>(blockIdx.x), wg, tid, pp, pos, q_round);
  }
  pp.finish();
  wait_o_read(tid);
}

}}  // namespace fa3lite::attn
