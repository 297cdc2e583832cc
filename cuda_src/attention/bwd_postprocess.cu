// Backward postprocess: dQ = softmax_scale * (f32 accumulator), converted to the input dtype and
// moved from the main kernel's fragment order (see bwd_dq.cuh) to (B, Sq, H, D) contiguous (varlen:
// each sequence's rows of the packed (total_q, H, D) dq).
// One thread per float4 of the accumulator: two column pairs, rows r and r + 8.
#include "../ptx/math.cuh"
#include "../ptx/types.cuh"

using namespace fa3lite;

#ifndef FA3LITE_HEAD_DIM
#error "FA3LITE_HEAD_DIM must be defined by the host"
#endif
#if FA3LITE_DTYPE_BF16
using Element = bf16_t;
#else
using Element = f16_t;
#endif

namespace fa3lite { namespace attn { namespace bwd {

struct PostParams {
  const float4* dq_accum;   // (B, H, num_m_blocks, kBlockM * D / 4)
  u16* dq;                  // (B, Sq, H, D) contiguous, or varlen (total_q, H, D)
  const i32* cu_seqlens_q;  // varlen: (B + 1,) row offsets of the packed dq, else null
  const i32* seqused_q;     // varlen: (B,) or null
  i64 total;                // number of float4 in dq_accum
  i32 seqlen_q;
  i32 num_heads;
  i32 num_m_blocks;
  float scale;
};

static_assert(sizeof(PostParams) == FA3LITE_PARAMS_SIZE, "host and device disagree on the PostParams size");
#ifdef FA3LITE_PARAMS_OK
static_assert(FA3LITE_PARAMS_OK, "host and device disagree on the PostParams layout");
#endif

constexpr int kHeadDim = FA3LITE_HEAD_DIM;            // the main kernel's (padded) head dim
#ifdef FA3LITE_HEAD_DIM_REAL
constexpr int kHeadDimReal = FA3LITE_HEAD_DIM_REAL;   // dq's, when 96 / 192 ran padded
#else
constexpr int kHeadDimReal = kHeadDim;
#endif
constexpr int kBlockM = FA3LITE_BWD_BLOCK_M;                    // the main kernel's query step
// The main kernel's dQ tiles (bwd_config.cuh): 128-query steps split rows, D >= 128 columns.
constexpr bool kDqSplitRows = kBlockM == 128;
constexpr int kDqN = !kDqSplitRows && kHeadDim >= 128 ? kHeadDim / 2 : kHeadDim;
constexpr int kDqChunks = kDqN / 8;
constexpr int kBlockF4 = kBlockM * kHeadDim / 4;
constexpr int kBlockThreads = 256;

}}}  // namespace fa3lite::attn::bwd

using namespace fa3lite::attn::bwd;

extern "C" __global__ void __launch_bounds__(kBlockThreads) fa3lite_bwd_postprocess(
    const __grid_constant__ PostParams p) {
  const i64 idx = static_cast<i64>(blockIdx.x) * kBlockThreads + threadIdx.x;
  if (idx >= p.total) return;
  const int f = idx % kBlockF4;
  const i64 blk = idx / kBlockF4;            // (b * H + h) * num_m_blocks + m
  const int m = blk % p.num_m_blocks;
  const i64 bh = blk / p.num_m_blocks;
  const int h = bh % p.num_heads;
  const i64 b = bh / p.num_heads;

  const int t = f % 128;
  const int chunk = f / 128;                 // g * kDqChunks + j
  const int g = chunk / kDqChunks;
  const int j = chunk % kDqChunks;
  const int w = t / 32;
  const int l = t % 32;
  const int row = m * kBlockM + (kDqSplitRows ? 64 * g : 0) + 16 * w + l / 4;
  const int col = (kDqSplitRows ? 0 : g * kDqN) + 8 * j + 2 * (l % 4);

  const float4 v = p.dq_accum[idx];
  int seqlen_q = p.seqlen_q;
  i64 first_row = b * p.seqlen_q;            // the sequence's first row of dq
  if (p.cu_seqlens_q != nullptr) {
    first_row = p.cu_seqlens_q[b];
    seqlen_q = p.seqused_q != nullptr ? p.seqused_q[b] : p.cu_seqlens_q[b + 1] - p.cu_seqlens_q[b];
  }
  if (col >= kHeadDimReal) return;           // a padding column: not in dq
  const i64 row_stride = static_cast<i64>(p.num_heads) * kHeadDimReal;
  const i64 base = (first_row + row) * row_stride + static_cast<i64>(h) * kHeadDimReal + col;
  if (row < seqlen_q) {
    *reinterpret_cast<u32*>(p.dq + base) = math::pack(v.x * p.scale, v.y * p.scale, Element{});
  }
  if (row + 8 < seqlen_q) {
    *reinterpret_cast<u32*>(p.dq + base + 8 * row_stride) = math::pack(v.z * p.scale, v.w * p.scale, Element{});
  }
}
