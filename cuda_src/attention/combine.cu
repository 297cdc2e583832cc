// Split-KV combine: merges the forward's per-split partial results (fwd_epilogue.cuh write_partial)
// into out and lse. For one (row, head) with split results (O_s normalised over split s's keys, L_s
// its log-sum-exp), the whole row's
//   L = log(sum_s exp(L_s) [+ exp(sink)]),   O = sum_s exp(L_s - L) * O_s,
// computed as max-shifted sums so that no exp overflows. A split that saw no key has L_s = -inf and
// weight 0 (its O_s is skipped, never multiplied); a row with no key in any split and no sink gets
// O = 0, L = -inf, as the unsplit kernel writes. One warp per (row, head): lanes share the splits'
// LSEs for the max and the sum, then the columns of O (two f32 per lane per pass).
#include "../ptx/math.cuh"
#include "../ptx/types.cuh"

using namespace fa3lite;

#if FA3LITE_DTYPE_BF16
using Element = bf16_t;
#else
using Element = f16_t;
#endif

namespace fa3lite { namespace attn { namespace combine {

struct CombineParams {
  const float* o_accum;     // (num_splits, total_q, Hq, Dv) f32
  const float* lse_accum;   // (num_splits, Hq, total_q) f32, natural log
  u16* out;                 // (total_q, Hq, Dv) contiguous, the input dtype
  float* lse;               // (Hq, total_q)
  const float* sink;        // (Hq,) f32 natural-log logits, or null
  const i32* cu_seqlens_q;  // (B + 1,)
  const i32* seqused_q;     // (B,) or null
  i32 total_q;
  i32 num_heads;
  i32 num_splits;
};

static_assert(sizeof(CombineParams) == FA3LITE_PARAMS_SIZE, "host and device disagree on the CombineParams size");
#ifdef FA3LITE_PARAMS_OK
static_assert(FA3LITE_PARAMS_OK, "host and device disagree on the CombineParams layout");
#endif

constexpr int kHeadDimV = FA3LITE_HEAD_DIM_V;   // O's columns (the tensor's, not a padded kernel's)
constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
static_assert(kHeadDimV % 2 == 0, "columns go in pairs");

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int m = 16; m > 0; m /= 2) v = fmaxf(v, math::shfl_xor(v, m));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int m = 16; m > 0; m /= 2) v += math::shfl_xor(v, m);
  return v;
}

}}}  // namespace fa3lite::attn::combine

using namespace fa3lite::attn::combine;

// grid.x: blocks of kWarps (row, head) pairs of the longest sequence; grid.y: the sequence.
extern "C" __global__ void __launch_bounds__(kThreads) fa3lite_combine(const __grid_constant__ CombineParams p) {
  const int lane = threadIdx.x % 32;
  const int pair = blockIdx.x * kWarps + threadIdx.x / 32;   // row * Hq + head inside the sequence
  const int b = blockIdx.y;
  // clamped to the packed rows as the forward clamps them (scheduler.cuh seq_of)
  const int first = min(max(p.cu_seqlens_q[b], 0), p.total_q);
  const int used = p.seqused_q != nullptr ? p.seqused_q[b] : p.cu_seqlens_q[b + 1] - first;
  const int rows = min(max(used, 0), p.total_q - first);
  const int row = pair / p.num_heads;
  const int head = pair % p.num_heads;
  if (row >= rows) return;
  const i64 q_row = first + row;
  const i64 split_lse_stride = static_cast<i64>(p.num_heads) * p.total_q;
  const float* lse_s = p.lse_accum + static_cast<i64>(head) * p.total_q + q_row;

  float top = p.sink != nullptr ? p.sink[head] : math::neg_inf();
  for (int s = lane; s < p.num_splits; s += 32) top = fmaxf(top, lse_s[s * split_lse_stride]);
  top = warp_max(top);
  float lse = math::neg_inf();
  if (top != math::neg_inf()) {
    float sum = 0.f;
    for (int s = lane; s < p.num_splits; s += 32) sum += math::ex2((lse_s[s * split_lse_stride] - top) * math::kLog2e);
    sum = warp_sum(sum);
    if (p.sink != nullptr) sum += math::ex2((p.sink[head] - top) * math::kLog2e);
    lse = top + math::lg2(sum) * math::kLn2;
  }
  if (lane == 0) p.lse[static_cast<i64>(head) * p.total_q + q_row] = lse;

  const i64 o_split_stride = static_cast<i64>(p.total_q) * p.num_heads * kHeadDimV;
  const i64 o_row = (q_row * p.num_heads + head) * kHeadDimV;
#pragma unroll
  for (int c = 2 * lane; c < kHeadDimV; c += 64) {
    float a = 0.f, d = 0.f;
    if (lse != math::neg_inf()) {
      for (int s = 0; s < p.num_splits; ++s) {
        const float l = lse_s[s * split_lse_stride];
        if (l == math::neg_inf()) continue;   // no key in this split: weight 0, O_s not read
        const float w = math::ex2((l - lse) * math::kLog2e);
        const float2 o = *reinterpret_cast<const float2*>(p.o_accum + s * o_split_stride + o_row + c);
        a = fmaf(w, o.x, a);
        d = fmaf(w, o.y, d);
      }
    }
    *reinterpret_cast<u32*>(p.out + o_row + c) = math::pack(a, d, Element{});
  }
}
