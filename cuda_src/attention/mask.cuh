// Masking of one S tile: keys past the end of the sequence, and with a causal mask keys after
// query i + causal_offset. Only tiles that straddle a boundary pay for it (see needs_mask).
#pragma once
#include "config.cuh"
#include "../ptx/math.cuh"
#include "fragment.cuh"

namespace fa3lite { namespace attn {

struct Mask {
  int seqlen_k;
  int causal_offset;
  int row0;   // global query row of the thread's first accumulator row (half 0)
  int col0;   // thread's column base inside a tile

  // True when key block n contains a key that some row of this warpgroup's 64 rows must not see.
  __device__ __forceinline__ bool needs_mask(int n_block, int wg_row0) const {
    const int last_key = (n_block + 1) * kBlockN - 1;
    bool tail = last_key >= seqlen_k;
    bool diag = kIsCausal && last_key > wg_row0 + causal_offset;
    return tail || diag;
  }

  template <int N>
  __device__ __forceinline__ void apply(float (&s)[N / 2], int n_block) const {
    const int key0 = n_block * kBlockN + col0;
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      const int key = key0 + frag::col(i);
      const int row = row0 + 8 * frag::half(i);
      bool hidden = key >= seqlen_k;
      if (kIsCausal) hidden = hidden || key > row + causal_offset;
      if (hidden) s[i] = math::neg_inf();
    }
  }
};

}}  // namespace fa3lite::attn
