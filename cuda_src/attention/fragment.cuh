// Where the values of a wgmma m64nN f32 accumulator live. Thread t of a warpgroup (warp w = t/32,
// lane l) holds N/2 floats; value i sits at
//   row = 16 w + l/4 + 8 * ((i >> 1) & 1),   col = 8 * (i >> 2) + 2 * (l % 4) + (i & 1).
// So each thread owns two rows (half h = 0, 1) and a row is spread over the 4 lanes of a quad.
#pragma once
#include "../ptx/types.cuh"

namespace fa3lite { namespace attn { namespace frag {

__device__ __forceinline__ int row_base(int tid) { return 16 * (tid / 32) + (tid % 32) / 4; }
__device__ __forceinline__ int col_base(int tid) { return 2 * (tid % 4); }
__host__ __device__ constexpr int half(int i) { return (i >> 1) & 1; }
__host__ __device__ constexpr int col(int i) { return 8 * (i >> 2) + (i & 1); }

}}}  // namespace fa3lite::attn::frag
