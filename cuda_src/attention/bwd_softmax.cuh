// Elementwise softmax gradient in the registers of an S^T accumulator (rows = keys, columns =
// queries), N query columns wide:
//   P^T  = exp2(S^T * scale_log2 - lse_log2[query])     0 where the key is hidden from the query
//   dS^T = P^T * (dP^T - dPsum[query])
// In two steps, so that the first runs while the dP^T wgmma is still in flight: probs_transposed
// (S^T -> P^T) and dscores_transposed (dP^T -> dS^T). With softcap the score is T = tanh(S^T *
// softcap_scale) (scale_log2 then carries softcap * log2(e)) and its derivative adds a factor
// 1 - T^2 to dS^T; T is needed in both, so the first step only takes the tanh (and masks) and the
// second forms P^T and dS^T together (no third register array for 1 - T^2).
// The thread's columns are cb + frag::col(i): 8-column group j gives it columns 8j + cb, +1. Their
// LSE/dPsum values come from the stage's rows in shared memory (the producer loads them with Q and
// dO), N/8 float2 per thread; the 8 lanes that share a column read one address (a broadcast).
#pragma once
#include "../ptx/compiler.cuh"
#include "../ptx/math.cuh"
#include "../ptx/smem_vec.cuh"
#include "bwd_config.cuh"
#include "bwd_params.cuh"
#include "bwd_scheduler.cuh"
#include "fragment.cuh"

namespace fa3lite { namespace attn { namespace bwd {

// Shared address of the statistic of query column `col` in a stats row that starts at `row`.
__device__ __forceinline__ u32 stat_at(u32 row, int col) { return row + 4 * col; }

// The thread's N/4 row statistics (LSE or dPsum) of a tile whose first query column is at shared
// address `row`.
template <int N>
__device__ __forceinline__ void load_row_stats(u32 row, int tid, float (&v)[N / 4]) {
  const u32 first = compiler::opaque(stat_at(row, frag::col_base(tid)));   // one register, offsets in the loads
#pragma unroll
  for (int j = 0; j < N / 8; ++j) smem_vec::ld_v2_f32(stat_at(first, 8 * j), v[2 * j], v[2 * j + 1]);
}

// Step 1 reads the LSE array, except with softcap (step 2 loads what it needs itself; see there).
constexpr bool kLseInStep1 = !kSoftcap;
// At 128-query steps the LSE loads go out after the dP^T wgmmas, not before the wait for dO: dO has
// always landed by then (tools/trace_probe.py's counted waits: 0-0.3% of the waits found the phase
// open), but the wait's mbarrier probe queued behind the warp's 16 LSE loads, so the dP^T wgmmas
// went out late (ncu: 6.6% of D = 64 samples on that wait). +1..3% at D = 64; at 64-query steps
// (D = 128) the same order lost 1..4% (benchmarks/RESULTS.md section 32).
constexpr bool kLseAfterDpt = kBlockM == 128;
// P^T is final after step 1 except with softcap (step 2 forms it), so the dV wgmma, which needs only
// P^T and dO, can be issued before dP^T is waited for (bwd_consumer.cuh). Not with 128-query steps:
// P^T's fragments next to dP^T then exceed the registers (ptxas spills and serialises the wgmmas).
constexpr bool kEarlyDv = kNeedDkv && !kSoftcap && kBlockM == 64;

// Sets the entries hidden from the thread's two key rows to -inf. Key `key` is visible to query i iff
// key < seqlen_k and (kIsCausal) key - causal_offset <= i <= key - local_offset: as columns of the
// tile counted from this thread's first (first_query), the bounds of frag::hide_outside. In 32 bits,
// exact in the kernels' domain (positions below 2^30, offsets within +-2^30:
// fa3lite/hopper/common.py), where (key - offset) - first_query stays within 32 bits; 64-bit bounds
// cost the varlen consumers registers they do not have (ptxas spilled).
template <int N>
__device__ __forceinline__ void hide_invisible(float (&st)[N / 2], const SeqMask& mk, int key_row0, int first_query) {
  if constexpr (!kIsCausal) {   // only key rows past the end: one predicate per row
#pragma unroll
    for (int i = 0; i < N / 2; ++i) st[i] = key_row0 + 8 * frag::half(i) >= mk.seqlen_k ? math::neg_inf() : st[i];
  } else {
    int lo[2], hi[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int key = key_row0 + 8 * h;
      lo[h] = key - mk.causal_offset - first_query;
      hi[h] = key < mk.seqlen_k ? key - mk.local_offset - first_query : -1;
    }
    frag::hide_outside<N>(st, lo, hi);
  }
}

// The exp2s of the accumulators of k16 step kk (8kk..8kk+7: the 16 query columns of one A fragment).
template <int N>
__device__ __forceinline__ void exp2_step(float (&st)[N / 2], int kk) {
#pragma unroll
  for (int i = 8 * kk; i < 8 * kk + 8; ++i) st[i] = math::ex2(st[i]);
}

// Step 1. key_row0: the thread's key row of accumulator half 0; query0: the tile's first query row.
// Accumulator i sits in column 8 (i >> 2) + cb + (i & 1): row statistic 2 (i >> 2) + (i & 1).
// The exponent (softcap: T) of every entry first, then hidden entries set to -inf behind a
// warp-uniform branch (most blocks need no mask and issue no compare or select per element), then
// the exp2s: after the branch, in one basic block with step 2, so the scheduler interleaves them
// with the dS^T math. exp2(-inf) = 0; with softcap step 2 makes P^T = 0 and a derivative of 0.
// Exp2 false: the caller takes the exp2s itself, k-step by k-step (exp2_step).
template <int N, bool Exp2 = true>
__device__ __forceinline__ void probs_transposed(float (&st)[N / 2], const BwdParams& p, const SeqMask& mk,
                                                 const float (&lse)[N / 4], int tid, bool masked, int key_row0,
                                                 int query0) {
#pragma unroll
  for (int i = 0; i < N / 2; ++i) {
    st[i] = kSoftcap ? math::tanh(st[i] * p.softcap_scale) : fmaf(st[i], p.scale_log2, -lse[frag::entry(i)]);
  }
  if (masked) hide_invisible<N>(st, mk, key_row0, query0 + frag::col_base(tid));
  if constexpr (!kSoftcap && Exp2) {
#pragma unroll
    for (int kk = 0; kk < N / 16; ++kk) exp2_step<N>(st, kk);
  }
}

// Step 2: dS^T from P^T (softcap: from T) and dP^T. With softcap the LSE and dPsum of each 8-column
// group are loaded right where they are used (from the shared rows lse_row and dps_row), so that
// neither array is held across the step: holding both, or masking here, costs more registers than
// the D = 128 consumer has.
template <int N>
__device__ __forceinline__ void dscores_transposed(float (&pt)[N / 2], float (&dpt)[N / 2], const float (&dpsum)[N / 4],
                                                   const BwdParams& p, int tid, u32 lse_row, u32 dps_row) {
  if constexpr (kSoftcap) {
    const int cb = frag::col_base(tid);
#pragma unroll
    for (int j = 0; j < N / 8; ++j) {
      float2 l, d;
      smem_vec::ld_v2_f32(stat_at(lse_row, 8 * j + cb), l.x, l.y);
      smem_vec::ld_v2_f32(stat_at(dps_row, 8 * j + cb), d.x, d.y);
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int i = 4 * j + r;
        // 1 - T^2 is in [0, 1] for a real T; the clamp turns a hidden entry's -inf into 0 (not NaN)
        dpt[i] = (dpt[i] - ((r & 1) ? d.y : d.x)) * fmaxf(fmaf(-pt[i], pt[i], 1.f), 0.f);
        pt[i] = math::ex2(fmaf(pt[i], p.scale_log2, -((r & 1) ? l.y : l.x)));
        dpt[i] *= pt[i];
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < N / 2; ++i) dpt[i] = pt[i] * (dpt[i] - dpsum[frag::entry(i)]);
  }
}

// A fragments of k16 step kk = accumulators 8kk..8kk+7 packed pairwise; also the register order of
// one stmatrix x4 of the 16-column block kk.
template <int N>
__device__ __forceinline__ void pack_fragment(const float (&acc)[N / 2], int kk, u32 (&frag)[4]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) frag[r] = math::pack(acc[8 * kk + 2 * r], acc[8 * kk + 2 * r + 1], Element{});
}

template <int N>
__device__ __forceinline__ void pack_fragments(const float (&acc)[N / 2], u32 (&frag)[N / 16][4]) {
#pragma unroll
  for (int kk = 0; kk < N / 16; ++kk) pack_fragment<N>(acc, kk, frag[kk]);
}

}}}  // namespace fa3lite::attn::bwd
