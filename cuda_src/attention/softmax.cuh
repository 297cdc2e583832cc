// Online softmax over key blocks, in the registers of the S accumulator.
//
// Scores are kept raw; the scale is folded into the exponent, so each probability costs one FFMA and
// one MUFU.EX2: p = exp2(s * scale_log2 - max * scale_log2). The row max is reduced across the quad
// every block (it is needed for the exponent); row sums stay per-thread partials, all rescaled by the
// same factor, and are reduced once at the end. Rows that have seen only masked keys keep max = -inf;
// the exponent's offset is then 0 instead of -inf, so no (-inf) - (-inf) = NaN can appear.
//
// Lazy rescale (FA4's trick): the offset only has to bound the exponent, not equal the running max.
// While a row's new max exceeds the offset by at most kRescaleSlack (log2 units), the offset stays,
// corr is 1 and O need not be touched (p may then reach 2^kRescaleSlack = 256: far inside fp32 for O
// and the sums, and bf16/fp16 keep the same relative precision at 256 as at 1). The result is the
// same softmax: O and the sum carry the same offset, and the LSE adds it back. Once the first blocks
// have set the offset, later ones rarely move it by 2^8, so the O rescale (d/2 FMULs a thread a
// block) mostly disappears.
#pragma once
#include "../ptx/math.cuh"
#include "fragment.cuh"
#include "mask.cuh"

namespace fa3lite { namespace attn {

constexpr float kRescaleSlack = 8.0f;

struct OnlineSoftmax {
  float row_max[2];   // the raw score the exponent is offset by (not always the running max: see above)
  float row_sum[2];

  __device__ __forceinline__ void init() {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      row_max[h] = math::neg_inf();
      row_sum[h] = 0.f;
    }
  }

  // Each row's max over this block's scores and the running max, reduced in kMaxChains independent
  // chains. One chain of N/4 dependent FMNMX per row kept the softmax's first phase waiting on its
  // own results: in ncu's stall samples of the d = 128 full and d = 64 causal 16k forwards FMNMX
  // held 14-15% of the samples, 4-5 points of them fixed-latency waits (benchmarks/RESULTS.md section
  // 57). Same count of FMNMX, a chain of N/4/kMaxChains + log2(kMaxChains) + 1. The max is exact, so
  // the order changes no result.
  static constexpr int kMaxChains = 4;   // a power of two
  template <int N>
  __device__ __forceinline__ void block_max(const float (&s)[N / 2], float (&mx)[2]) const {
    static_assert(N / 4 >= kMaxChains, "each chain starts from one of the row's scores");
    float part[2][kMaxChains];
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      const int k = frag::entry(i);
      float& c = part[frag::half(i)][k % kMaxChains];
      c = k < kMaxChains ? s[i] : fmaxf(c, s[i]);
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int w = kMaxChains / 2; w > 0; w /= 2) {
#pragma unroll
        for (int k = 0; k < w; ++k) part[h][k] = fmaxf(part[h][k], part[h][k + w]);
      }
      mx[h] = fmaxf(row_max[h], part[h][0]);
    }
  }

  // Turns S into P in place and gives the factors the O accumulator's rows must be scaled by.
  // Returns whether any factor differs from 1 (O needs the rescale).
  template <int N>
  __device__ __forceinline__ bool update(float (&s)[N / 2], float scale_log2, float (&corr)[2]) {
    float mx[2];
    block_max<N>(s, mx);
    float offset[2];
    bool rescale = false;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      mx[h] = fmaxf(mx[h], math::shfl_xor(mx[h], 1));
      mx[h] = fmaxf(mx[h], math::shfl_xor(mx[h], 2));
      // False for a first finite max (the difference is +inf) and while every key was masked (NaN).
      const bool keep = (mx[h] - row_max[h]) * scale_log2 <= kRescaleSlack;
      if (keep) {
        offset[h] = row_max[h] * scale_log2;
        corr[h] = 1.f;
      } else {
        offset[h] = mx[h] == math::neg_inf() ? 0.f : mx[h] * scale_log2;
        corr[h] = math::ex2(row_max[h] * scale_log2 - offset[h]);
        row_max[h] = mx[h];
        row_sum[h] *= corr[h];
        rescale = true;
      }
    }
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      s[i] = math::ex2(fmaf(s[i], scale_log2, -offset[frag::half(i)]));
      row_sum[frag::half(i)] += s[i];
    }
    return rescale;
  }

  // Quad-reduces the row sums; gives the factor O's rows are normalised by and the natural-log LSE.
  // Without a sink (not kSink, or a sink of -inf): 1/sum (0 for rows with no visible key) and LSE = offset +
  // log(sum) (-inf for such rows). With a sink s, the denominator gains 2^s: with M = max(offset, s),
  // total = sum * 2^(offset - M) + 2^(s - M) (both terms <= 1 times sum, so nothing overflows), the
  // factor is 2^(offset - M) / total and LSE = M + log2(total); a row with no visible key (offset
  // -inf, sum 0) gets factor 0 and LSE = s.
  __device__ __forceinline__ void finalize(float scale_log2, float sink_log2, float (&inv)[2], float (&lse)[2]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float sum = row_sum[h];
      sum += math::shfl_xor(sum, 1);
      sum += math::shfl_xor(sum, 2);
      if (!kSink || sink_log2 == math::neg_inf()) {
        const bool empty = !(sum > 0.f);
        inv[h] = empty ? 0.f : math::rcp(sum);
        lse[h] = empty ? math::neg_inf() : (row_max[h] * scale_log2 + math::lg2(sum)) * math::kLn2;
      } else {
        const float offset = row_max[h] * scale_log2;   // -inf for a row with no visible key
        const float top = fmaxf(offset, sink_log2);
        const float kept = math::ex2(offset - top);
        const float total = fmaf(sum, kept, math::ex2(sink_log2 - top));
        inv[h] = kept * math::rcp(total);
        lse[h] = (top + math::lg2(total)) * math::kLn2;
      }
    }
  }
};

}}  // namespace fa3lite::attn
