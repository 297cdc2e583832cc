// Where the values of a wgmma m64nN f32 accumulator live. Thread t of a warpgroup (warp w = t/32,
// lane l) holds N/2 floats; value i sits at
//   row = 16 w + l/4 + 8 * ((i >> 1) & 1),   col = 8 * (i >> 2) + 2 * (l % 4) + (i & 1).
// So each thread owns two rows (half h = 0, 1) and a row is spread over the 4 lanes of a quad.
#pragma once
#include "../ptx/math.cuh"
#include "../ptx/types.cuh"

namespace fa3lite { namespace attn { namespace frag {

__device__ __forceinline__ int row_base(int tid) { return 16 * (tid / 32) + (tid % 32) / 4; }
__device__ __forceinline__ int col_base(int tid) { return 2 * (tid % 4); }
__host__ __device__ constexpr int half(int i) { return (i >> 1) & 1; }
__host__ __device__ constexpr int col(int i) { return 8 * (i >> 2) + (i & 1); }
// Position of value i among its row's N/4 values (the half's k-th entry, left to right).
__host__ __device__ constexpr int entry(int i) { return 2 * (i >> 2) + (i & 1); }

// Sets to -inf the entries outside their row's visible columns: entry i (half h) stays iff
// lo[h] <= col(i) <= hi[h], columns counted from the thread's col_base (any 32-bit bounds). Each
// entry costs two compares against its compile-time column and a select, and no branch: per-entry
// tests written with a short-circuit || (key - query against each offset) compiled into divergent
// branches, and a masked backward block cost as much as two unmasked ones. (The backward's; the
// forward takes visible_bits below. The bits form here: D = 64 causal 2672 -> 2624 SASS
// instructions, D = 128 2976 -> 2968, D = 256 2456 -> 2480: its set-up outweighs 16 entries.)
template <int N>
__device__ __forceinline__ void hide_outside(float (&s)[N / 2], const int (&lo)[2], const int (&hi)[2]) {
#pragma unroll
  for (int i = 0; i < N / 2; ++i) {
    const bool out = (col(i) < lo[half(i)]) | (col(i) > hi[half(i)]);
    s[i] = out ? math::neg_inf() : s[i];
  }
}

// Entries of one half (one row) left of column x, in [0, n]: the half's entries are k = 2 (i >> 2) +
// (i & 1), at columns 8 (k >> 1) + (k & 1), two in each 8 columns; x is clamped into [0, n].
__device__ __forceinline__ int entries_before(int x, int n) {
  x = min(max(x, 0), n);
  return 2 * (x >> 3) + min(x & 7, 2);
}

// A thread's visible entries as bits, per half: bit k % 32 of word k / 32 is the half's entry k.
template <int N>
struct VisibleBits {
  static constexpr int kWords = (N / 4 + 31) / 32;
  u32 w[2][kWords];
};

// The bits of the entries inside their row's visible columns, lo[h] <= col <= hi[h] (columns counted
// from the thread's col_base, any 32-bit bounds). Columns grow with k, so the visible entries of a
// half are one run, [entries_before(lo), entries_before(hi + 1)): two shifts and a LOP3 a word.
template <int N>
__device__ __forceinline__ VisibleBits<N> visible_bits(const int (&lo)[2], const int (&hi)[2]) {
  VisibleBits<N> b;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int first = entries_before(lo[h], N);
    const int end = entries_before(min(hi[h], N) + 1, N);   // no overflow at hi = 2^31 - 1
#pragma unroll
    for (int w = 0; w < VisibleBits<N>::kWords; ++w) {
      const u32 from = math::shl(~0u, static_cast<u32>(max(first - 32 * w, 0)));
      const u32 to = math::shl(~0u, static_cast<u32>(max(end - 32 * w, 0)));
      b.w[h][w] = from & ~to;
    }
  }
  return b;
}

// Sets to -inf the entries whose bit is clear: a bit test on a compile-time position and a select
// each, which ptxas turns into R2P (predicates from one register's bits) and FSELs, in one straight
// run, as hide_outside's selects.
template <int N>
__device__ __forceinline__ void hide_bits(float (&s)[N / 2], const VisibleBits<N>& b) {
#pragma unroll
  for (int i = 0; i < N / 2; ++i) {
    const int k = entry(i);
    const bool visible = (b.w[half(i)][k / 32] >> (k % 32)) & 1u;
    s[i] = visible ? s[i] : math::neg_inf();
  }
}

}}}  // namespace fa3lite::attn::frag
