// Backward postprocess: dQ = softmax_scale * (f32 accumulator), converted to the input dtype and
// moved from the main kernel's fragment order (see bwd_dq.cuh) to (B, Sq, H, D) contiguous (varlen:
// each sequence's rows of the packed (total_q, H, D) dq).
// One CTA per query block: the block's float4s are read in order (each holds two column pairs, of
// rows r and r + 8), scaled and converted into a row-major tile in shared memory, and the tile's
// rows go out in 16-byte stores, so every warp writes whole 32-byte sectors (a fragment-order
// store of the pairs would write 16 bytes per row and sector).
// Where the main kernel stores each query block's first tile (claims or the first turn, bwd_dq.cuh)
// the accumulator was not zeroed: a block whose claim word or turn counter is 0 was visited by no key
// block (no key is visible to its rows), and its dq rows are zeros.
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
  const i32* dq_visits;     // claim words or turn counters, kVisitWords per query block (0: not visited), or null
  const i32* cu_seqlens_q;  // varlen: (B + 1,) row offsets of the packed dq, else null
  const i32* seqused_q;     // varlen: (B,) or null
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
// Claim words or turn counters per query block (bwd_config.cuh kSemsPerBlock): wide, one per consumer
// warpgroup, and both warpgroups write every block a key block visits, so the first word tells.
constexpr int kVisitWords = kHeadDim > 128 ? 2 : 1;
constexpr int kBlockF4 = kBlockM * kHeadDim / 4;
constexpr int kBlockThreads = 256;
// Tile rows padded by 16 bytes: the 8 rows one warp's pairs fall in then start 4 banks apart, so the
// u32 stores into the tile are conflict-free; rows stay 16-byte aligned for the vector reads.
constexpr int kTileRowBytes = kHeadDim * 2 + 16;
constexpr int kRowChunks = kHeadDimReal / 8;   // 16-byte chunks of one dq row

}}}  // namespace fa3lite::attn::bwd

using namespace fa3lite::attn::bwd;

extern "C" __global__ void __launch_bounds__(kBlockThreads) fa3lite_bwd_postprocess(
    const __grid_constant__ PostParams p) {
  __shared__ __align__(16) unsigned char tile[kBlockM * kTileRowBytes];
  // Blocks from the last back: the main kernel ends on the last (batch, head) pairs (its launch
  // order), whose accumulator is the part still in L2 -- 50.5 -> 48.3 us a call at 16k tokens,
  // 51.6 -> 49.3 at d = 128 full 16k (benchmarks/RESULTS.md section 53).
  const i64 blk = gridDim.x - 1 - blockIdx.x;   // (b * H + h) * num_m_blocks + m
  const int m = blk % p.num_m_blocks;
  const i64 bh = blk / p.num_m_blocks;
  const int h = bh % p.num_heads;
  const i64 b = bh / p.num_heads;
  const float4* src = p.dq_accum + blk * kBlockF4;
  int seqlen_q = p.seqlen_q;
  i64 first_row = b * p.seqlen_q;            // the sequence's first row of dq
  if (p.cu_seqlens_q != nullptr) {
    first_row = p.cu_seqlens_q[b];
    seqlen_q = p.seqused_q != nullptr ? p.seqused_q[b] : p.cu_seqlens_q[b + 1] - p.cu_seqlens_q[b];
  }
  // Varlen: a block past the sequence's rows has no dq row (and its accumulator was never zeroed).
  if (m * kBlockM >= seqlen_q) return;
  const bool visited = p.dq_visits == nullptr || p.dq_visits[blk * kVisitWords] != 0;

  for (int f = threadIdx.x; f < kBlockF4; f += kBlockThreads) {
    const int t = f % 128;
    const int chunk = f / 128;               // g * kDqChunks + j
    const int g = chunk / kDqChunks;
    const int j = chunk % kDqChunks;
    const int w = t / 32;
    const int l = t % 32;
    const int row = (kDqSplitRows ? 64 * g : 0) + 16 * w + l / 4;
    const int col = (kDqSplitRows ? 0 : g * kDqN) + 8 * j + 2 * (l % 4);
    const float4 v = visited ? src[f] : make_float4(0.f, 0.f, 0.f, 0.f);
    unsigned char* at = tile + row * kTileRowBytes + col * 2;
    *reinterpret_cast<u32*>(at) = math::pack(v.x * p.scale, v.y * p.scale, Element{});
    *reinterpret_cast<u32*>(at + 8 * kTileRowBytes) = math::pack(v.z * p.scale, v.w * p.scale, Element{});
  }
  __syncthreads();

  const i64 row_stride = static_cast<i64>(p.num_heads) * kHeadDimReal;
  // Only the real columns go out (96 / 192 ran padded); rows past the sequence are not in dq.
  for (int c = threadIdx.x; c < kBlockM * kRowChunks; c += kBlockThreads) {
    const int r = c / kRowChunks;
    const int q = c % kRowChunks;
    const int row = m * kBlockM + r;
    if (row < seqlen_q) {
      const uint4 v = *reinterpret_cast<const uint4*>(tile + r * kTileRowBytes + q * 16);
      *reinterpret_cast<uint4*>(p.dq + (first_row + row) * row_stride + static_cast<i64>(h) * kHeadDimReal + q * 8) = v;
    }
  }
}
