// Score modification of one S tile, in this order: softcap (every tile, kSoftcap), then the mask
// (only tiles that straddle a boundary: see needs_mask). The mask hides keys past the end of the
// sequence and, with kIsCausal, keys outside the band i + local_offset <= j <= i + causal_offset
// (causal: only the upper edge; a sliding window: both). Masked scores become -inf, after the
// softcap, so the tanh never sees them. i is a row's query position: its row, or with packed GQA
// (p.pack_group > 1, varlen only: the group's query heads of one position on adjacent rows) its row
// divided by the group size, so every packed row keeps its own position's band.
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

// The query position of a (sequence) row: the row itself, or with packed GQA the row / group.
__device__ __forceinline__ int query_pos(int row, int pack_group) { return kVarlen ? row / pack_group : row; }

struct Mask {
  int seqlen_k;
  int causal_offset;
  int local_offset;
  int pos[2];      // query positions of the thread's two accumulator rows (halves 0, 1)
  int first_pos;   // of this warpgroup's first and last rows
  int last_pos;
  int col0;        // thread's column base inside a tile

  // wg_row0: the warpgroup's first row; row: the thread's first row (both in the sequence).
  __device__ __forceinline__ Mask(int seqlen_k_, int causal_offset_, int local_offset_, int wg_row0, int row,
                                  int col0_, int pack_group)
      : seqlen_k(seqlen_k_), causal_offset(causal_offset_), local_offset(local_offset_),
        pos{query_pos(row, pack_group), query_pos(row + 8, pack_group)}, first_pos(query_pos(wg_row0, pack_group)),
        last_pos(query_pos(wg_row0 + 63, pack_group)), col0(col0_) {}

  // True when key block n contains a key that some row of this warpgroup's 64 rows must not see.
  // The host keeps both offsets within +-2^30, so no sum here overflows.
  __device__ __forceinline__ bool needs_mask(int n_block) const {
    const int first_key = n_block * kBlockN;
    const int last_key = first_key + kBlockN - 1;
    const bool tail = last_key >= seqlen_k;
    const bool upper = kIsCausal && last_key > first_pos + causal_offset;
    const bool lower = kIsCausal && first_key < last_pos + local_offset;
    return tail || upper || lower;
  }

  // The visible columns of the thread's two rows, counted from its first column in key block n, as
  // bits (frag::visible_bits): a key is visible iff key < seqlen_k and, kIsCausal, local_offset <=
  // key - pos <= causal_offset. Positions and offsets are within +-2^30 (host), so no sum overflows.
  template <int N>
  __device__ __forceinline__ void apply(float (&s)[N / 2], int n_block) const {
    const int key0 = n_block * kBlockN + col0;
    int lo[2], hi[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      hi[h] = seqlen_k - 1 - key0;
      lo[h] = 0;
      if (kIsCausal) {
        hi[h] = min(hi[h], pos[h] - key0 + causal_offset);
        lo[h] = pos[h] - key0 + local_offset;
      }
    }
    frag::hide_bits<N>(s, frag::visible_bits<N>(lo, hi));
  }

  // Softcap, then the mask where key block n needs one.
  template <int N>
  __device__ __forceinline__ void mod(float (&s)[N / 2], int n_block, float softcap_scale) const {
    if constexpr (kSoftcap) softcap_scores<N>(s, softcap_scale);
    if (needs_mask(n_block)) apply<N>(s, n_block);
  }
};

}}  // namespace fa3lite::attn
