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

// Sets to -inf the entries outside their row's visible columns: entry i (half h) stays iff
// lo[h] <= col(i) <= hi[h], columns counted from the thread's col_base (any 32-bit bounds). Each
// entry costs two compares against its compile-time column and a select, and no branch: per-entry
// tests written with a short-circuit || (key - query against each offset) compiled into divergent
// branches, and a masked backward block cost as much as two unmasked ones.
template <int N>
__device__ __forceinline__ void hide_outside(float (&s)[N / 2], const int (&lo)[2], const int (&hi)[2]) {
#pragma unroll
  for (int i = 0; i < N / 2; ++i) {
    const bool out = (col(i) < lo[half(i)]) | (col(i) > hi[half(i)]);
    s[i] = out ? math::neg_inf() : s[i];
  }
}

}}}  // namespace fa3lite::attn::frag
