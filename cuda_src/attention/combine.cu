// Split-KV combine: merges the forward's per-split partial results (fwd_epilogue.cuh write_partial)
// into out and lse. For one (row, head) with split results (O_s normalised over split s's keys, L_s
// its log-sum-exp), the whole row's
//   L = log(sum_s exp(L_s) [+ exp(sink)]),   O = sum_s exp(L_s - L) * O_s,
// computed as max-shifted sums so that no exp overflows. A split that saw no key has L_s = -inf,
// weight 0 and O_s = 0 (write_partial writes zeros there, so every value read is finite); a row with
// no key in any split and no sink gets O = 0, L = -inf, as the unsplit kernel writes.
// One warp per (row, head). A decode step has few of them (B=1, 8 K/V heads, 4 query heads each: 32
// warps on a GPU of 132 SMs), so the time is memory latency, not bandwidth: every load a warp needs
// is issued before its first use -- the splits' LSEs one per lane, then kUnroll splits' O columns
// at a time -- so that a row costs about three round trips to L2 whatever the split count.
// The host launches it as a dependent of the split kernel (launch.Prepared with dependent=True): it
// reads its sequence's rows while that kernel's CTAs finish, then waits for their results.
// out and lse are written through strides, rows in groups of row_group as the split kernel writes
// them (params.cuh): e.g. a decode step's (B, Sq, Hq, Dv) output in its own layout, a position's
// packed query heads one group (fa3lite/hopper/varlen.py).
#include "../ptx/math.cuh"
#include "../ptx/sync.cuh"
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
  u16* out;                 // (total_q, Hq, Dv) through the strides below, the input dtype
  float* lse;               // (Hq, total_q) through the strides below
  const float* sink;        // (Hq,) f32 natural-log logits, or null
  const i32* cu_seqlens_q;  // (B + 1,)
  const i32* seqused_q;     // (B,) or null
  // elements; row r of head h: group r / row_group, member r % row_group (FwdParams' o_* and lse_*)
  i64 out_row_stride;       // per group
  i64 out_member_stride;
  i64 out_head_stride;
  i64 lse_row_stride;
  i64 lse_member_stride;
  i64 lse_head_stride;
  i32 total_q;
  i32 num_heads;
  i32 num_splits;
  i32 row_group;            // 1: plain rows
};

static_assert(sizeof(CombineParams) == FA3LITE_PARAMS_SIZE, "host and device disagree on the CombineParams size");
#ifdef FA3LITE_PARAMS_OK
static_assert(FA3LITE_PARAMS_OK, "host and device disagree on the CombineParams layout");
#endif

constexpr int kHeadDimV = FA3LITE_HEAD_DIM_V;   // O's columns (the tensor's, not a padded kernel's)
constexpr int kWarps = 4;                       // small CTAs: a decode step's few warps spread over SMs
constexpr int kThreads = 32 * kWarps;
constexpr int kMaxSplits = 128;                 // fa3lite/hopper/splits.py MAX_SPLITS
constexpr int kSplitsPerLane = kMaxSplits / 32;
constexpr int kPasses = (kHeadDimV + 63) / 64;  // a lane's column pairs: 2 * lane + 64 * pass
constexpr int kUnroll = 8;                      // splits whose O columns are in flight together
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
  const int splits = min(p.num_splits, kMaxSplits);
  const float sink = p.sink != nullptr ? p.sink[head] : math::neg_inf();
  grid::wait_dependencies();   // the split kernel's partial results from here on

  // Split s's LSE sits in lane s % 32, register s / 32.
  const float* lse_s = p.lse_accum + static_cast<i64>(head) * p.total_q + q_row;
  const i64 split_lse_stride = static_cast<i64>(p.num_heads) * p.total_q;
  float l[kSplitsPerLane];
#pragma unroll
  for (int j = 0; j < kSplitsPerLane; ++j) {
    const int s = lane + 32 * j;
    l[j] = s < splits ? lse_s[s * split_lse_stride] : math::neg_inf();
  }
  float top = sink;
#pragma unroll
  for (int j = 0; j < kSplitsPerLane; ++j) top = fmaxf(top, l[j]);
  top = warp_max(top);
  float lse = math::neg_inf();
  if (top != math::neg_inf()) {   // warp-uniform
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < kSplitsPerLane; ++j) sum += math::ex2((l[j] - top) * math::kLog2e);   // -inf: 0
    sum = warp_sum(sum);
    if (p.sink != nullptr) sum += math::ex2((sink - top) * math::kLog2e);
    lse = top + math::lg2(sum) * math::kLn2;
  }
  const int group = static_cast<int>(q_row) / p.row_group;
  const int member = static_cast<int>(q_row) % p.row_group;
  if (lane == 0) p.lse[group * p.lse_row_stride + member * p.lse_member_stride + head * p.lse_head_stride] = lse;

  float acc[kPasses][2];
#pragma unroll
  for (int c = 0; c < kPasses; ++c) acc[c][0] = acc[c][1] = 0.f;
  if (lse != math::neg_inf()) {   // warp-uniform; else every weight would be exp(-inf - -inf)
    float w[kSplitsPerLane];
#pragma unroll
    for (int j = 0; j < kSplitsPerLane; ++j) w[j] = math::ex2((l[j] - lse) * math::kLog2e);
    const i64 o_split_stride = static_cast<i64>(p.total_q) * p.num_heads * kHeadDimV;
    const float* o_row = p.o_accum + (q_row * p.num_heads + head) * kHeadDimV;
#pragma unroll
    for (int j = 0; j < kSplitsPerLane; ++j) {
      if (32 * j >= splits) break;
#pragma unroll 1
      for (int s0 = 32 * j; s0 < min(splits, 32 * j + 32); s0 += kUnroll) {
        float2 o[kUnroll][kPasses];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
          for (int c = 0; c < kPasses; ++c) {
            const int col = 2 * lane + 64 * c;
            o[u][c] = s0 + u < splits && col < kHeadDimV
                          ? *reinterpret_cast<const float2*>(o_row + (s0 + u) * o_split_stride + col)
                          : float2{0.f, 0.f};
          }
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const float wu = warp::shfl(w[j], (s0 + u) % 32);   // lanes past the splits hold weight 0
#pragma unroll
          for (int c = 0; c < kPasses; ++c) {
            acc[c][0] = fmaf(wu, o[u][c].x, acc[c][0]);
            acc[c][1] = fmaf(wu, o[u][c].y, acc[c][1]);
          }
        }
      }
    }
  }
  u16* out_row = p.out + group * p.out_row_stride + member * p.out_member_stride + head * p.out_head_stride;
#pragma unroll
  for (int c = 0; c < kPasses; ++c) {
    const int col = 2 * lane + 64 * c;
    if (col < kHeadDimV) *reinterpret_cast<u32*>(out_row + col) = math::pack(acc[c][0], acc[c][1], Element{});
  }
}
