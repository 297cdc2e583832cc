// Score modification of one S tile, in this order: softcap (every tile, kSoftcap), then the mask
// (only tiles that straddle a boundary: see needs_mask). The mask hides keys past the end of the
// sequence and, with kIsCausal, keys outside the band i + local_offset <= j <= i + causal_offset
// (causal: only the upper edge; a sliding window: both). Masked scores become -inf, after the
// softcap, so the tanh never sees them.
#pragma once
#include "config.cuh"
#include "../ptx/math.cuh"
#include "fragment.cuh"

namespace fa3lite { namespace attn {

// softcap * tanh(s * scale / softcap) with the outer softcap folded into the exponent's scale
// (the host passes scale_log2 = softcap * log2(e)), so each score costs one FMUL and one MUFU.TANH.
template <int N>
__device__ __forceinline__ void softcap_scores(float (&s)[N / 2], float softcap_scale) {
#pragma unroll
  for (int i = 0; i < N / 2; ++i) s[i] = math::tanh(s[i] * softcap_scale);
}

struct Mask {
  int seqlen_k;
  int causal_offset;
  int local_offset;
  int row0;   // global query row of the thread's first accumulator row (half 0)
  int col0;   // thread's column base inside a tile

  // True when key block n contains a key that some row of this warpgroup's 64 rows must not see.
  // The host keeps both offsets within +-2^30, so no sum here overflows.
  __device__ __forceinline__ bool needs_mask(int n_block, int wg_row0) const {
    const int first_key = n_block * kBlockN;
    const int last_key = first_key + kBlockN - 1;
    const bool tail = last_key >= seqlen_k;
    const bool upper = kIsCausal && last_key > wg_row0 + causal_offset;
    const bool lower = kIsCausal && first_key < wg_row0 + 63 + local_offset;
    return tail || upper || lower;
  }

  template <int N>
  __device__ __forceinline__ void apply(float (&s)[N / 2], int n_block) const {
    const int key0 = n_block * kBlockN + col0;
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      const int key = key0 + frag::col(i);
      const int row = row0 + 8 * frag::half(i);
      bool hidden = key >= seqlen_k;
      if (kIsCausal) hidden = hidden || key - row > causal_offset || key - row < local_offset;
      if (hidden) s[i] = math::neg_inf();
    }
  }

  // Softcap, then the mask where key block n needs one.
  template <int N>
  __device__ __forceinline__ void mod(float (&s)[N / 2], int n_block, int wg_row0, float softcap_scale) const {
    if constexpr (kSoftcap) softcap_scores<N>(s, softcap_scale);
    if (needs_mask(n_block, wg_row0)) apply<N>(s, n_block);
  }
};

}}  // namespace fa3lite::attn
