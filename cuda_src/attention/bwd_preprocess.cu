// Backward preprocess, one pass over dO and O:
//   dpsum[b, h, i]    = sum_d dO[b, i, h, d] * O[b, i, h, d]   (f32; 0 for padded rows i >= Sq)
//   lse_log2[b, h, i] = lse[b, h, i] * log2(e)                  (+inf for fully masked rows, whose
//                       lse is -inf, and for padded rows: the main kernel's P = exp2(s - lse_log2)
//                       is then exactly 0 there instead of NaN)
// Rows are padded to whole query blocks of the main kernel, so its 1-D bulk loads stay in bounds.
// Varlen pads every sequence to max_seqlen_q; the dQ accumulator of the blocks past a sequence's own
// last one is never read (the main kernel walks the sequence's blocks, the postprocess skips them),
// so it is not zeroed either: with mixed lengths that was over a third of this kernel's traffic.
// Their statistics are still written: a sink's gradient sums them over every row (bwd.py sink_grad).
// kThreadsPerRow threads share a row, 8 elements (16 bytes) each, and reduce with butterflies.
// It also zeroes what the main kernel adds into (when given): the dQ accumulator, rows_pad x D
// floats per (b, h) -- only where the main kernel does not store each block's first tile (the wide
// layout; bwd_dq.cuh) -- and the turn counters or claim words, one per query block. That saves the
// host a memset launch per backward, and this kernel runs before the main one on the same stream.
// Varlen: it also writes zeros into the gradient rows no sequence owns (zero_unowned_rows). The main
// kernel and the postprocess write every row a sequence uses (zeros where no key or query reaches
// it), so dq, dk and dv come uninitialised instead of as three memsets of the packed tensors (~20 us
// each at width 2048 and 16k tokens, 5% of a causal backward there).
// Varlen: it also builds each sequence's q, k, v, dout tensor maps for the main kernel (write_seq_maps).
// Built there per CTA, before the first load with nothing to overlap it, they cost every CTA about a
// microsecond; here one thread per sequence builds them, and each main-kernel CTA only acquires them.
#include "../ptx/math.cuh"
#include "../ptx/types.cuh"
#include "tile_io.cuh"

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

struct PreParams {
  const u16* dout;     // (B, Sq, H, D), 16-byte aligned rows
  const u16* out;
  const float* lse;    // (B, H, Sq)
  float* lse_log2;     // (B, H, rows_pad)
  float* dpsum;
  float* dq_accum;     // (B, H, rows_pad, D) in any order, or null: zeroed here
  i32* dq_sem;         // (B, H, rows_pad / block_m, sems_per_block), or null: zeroed here
  i32* tile_counter;   // the main kernel's tile counter (bwd_scheduler.cuh), or null: zeroed here
  const i32* cu_seqlens_q;   // varlen: (B + 1,) row offsets of the packed dout/out/lse rows, else null
  const i32* seqused_q;      // varlen: (B,) or null
  i64 do_stride_b, do_stride_s, do_stride_h;   // elements
  i64 o_stride_b, o_stride_s, o_stride_h;
  i64 lse_stride_b, lse_stride_h, lse_stride_s;
  i32 seqlen_q;
  i32 rows_pad;
  i32 num_heads;
  i32 row_blocks;      // ceil(rows_pad / kRowsPerBlock)
  i32 block_m;         // query rows per block of turn counters (the main kernel's kBlockM)
  i32 sems_per_block;  // turn counters per query block (the main kernel's kSemsPerBlock)
  // Varlen (else null / 0): the packed gradients, contiguous rows, and the key-side offsets
  void* dq;            // (total_q, H, D), dq_row_bytes a row
  void* dk;            // (total_k, Hk or H, D) in the main kernel's dK dtype
  void* dv;            // (total_k, Hk or H, Dv)
  const i32* cu_seqlens_k;   // (B + 1,)
  const i32* seqused_k;      // (B,) or null
  i64 dq_row_bytes, dk_row_bytes, dv_row_bytes;   // multiples of 16
  i32 total_q, total_k;      // packed rows
  i32 num_seqs;              // B
  // Varlen (else null / 0): the main kernel's tensor maps of each sequence, 4 per sequence, built
  // from these templates (maps of the packed tensors) cut to the sequence's rows
  TmaDesc* seq_maps;         // (B, 4): q, k, v, dout
  const char* q_base;
  const char* k_base;
  const char* v_base;
  i64 q_row_bytes, k_row_bytes, v_row_bytes;   // dout's: do_stride_s elements
  TmaDesc q_map, k_map, v_map, dout_map;
};

static_assert(sizeof(PreParams) == FA3LITE_PARAMS_SIZE, "host and device disagree on the PreParams size");
#ifdef FA3LITE_PARAMS_OK
static_assert(FA3LITE_PARAMS_OK, "host and device disagree on the PreParams layout");
#endif

constexpr int kHeadDim = FA3LITE_HEAD_DIM;            // the main kernel's (padded) head dim
#ifdef FA3LITE_HEAD_DIM_V_REAL
constexpr int kHeadDimVReal = FA3LITE_HEAD_DIM_V_REAL;   // dout's and out's (V's), when run padded
#else
constexpr int kHeadDimVReal = kHeadDim;
#endif
constexpr int kThreadsPerRow = kHeadDim / 8;
constexpr int kBlockThreads = 256;
constexpr int kRowsPerBlock = kBlockThreads / kThreadsPerRow;
static_assert(kThreadsPerRow <= 32 && (kThreadsPerRow & (kThreadsPerRow - 1)) == 0, "row groups within a warp");

__device__ __forceinline__ float dot8(uint4 a, uint4 b) {
  const u32 av[4] = {a.x, a.y, a.z, a.w};
  const u32 bv[4] = {b.x, b.y, b.z, b.w};
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    s = fmaf(math::to_float(static_cast<u16>(av[k] & 0xffffu), Element{}),
             math::to_float(static_cast<u16>(bv[k] & 0xffffu), Element{}), s);
    s = fmaf(math::to_float(static_cast<u16>(av[k] >> 16), Element{}),
             math::to_float(static_cast<u16>(bv[k] >> 16), Element{}), s);
  }
  return s;
}

// Rows [first, last) of a packed tensor of `row_bytes`-byte rows, zeroed by the CTA's threads.
__device__ __forceinline__ void zero_rows(void* base, i64 row_bytes, i64 first, i64 last) {
  uint4* const dst = reinterpret_cast<uint4*>(static_cast<char*>(base) + first * row_bytes);
  const i64 chunks = (last - first) * row_bytes / 16;
  for (i64 c = threadIdx.x; c < chunks; c += kBlockThreads) dst[c] = make_uint4(0u, 0u, 0u, 0u);
}

// Region r of B + 1 packed rows no sequence owns: r = 0 before sequence 0, then from the end of
// sequence r - 1's used rows (cu[r - 1] + used[r - 1]) to the start of sequence r, the last one up
// to `total`. Bounds clamped to [0, total], so malformed offsets leave rows unwritten but never
// write out of bounds (as the forward's fill_gap_rows).
__device__ __forceinline__ void unowned_rows(const i32* cu, const i32* used, int r, int seqs, i64 total,
                                             i64& first, i64& last) {
  first = 0;
  if (r > 0) first = static_cast<i64>(cu[r - 1]) + (used != nullptr ? used[r - 1] : cu[r] - cu[r - 1]);
  last = r < seqs ? cu[r] : total;
  first = max(static_cast<i64>(0), min(first, total));
  last = max(first, min(last, total));
}

// Region r goes to CTA r % gridDim.x: usually every region is empty and this costs two loads.
__device__ __forceinline__ void zero_unowned_rows(const PreParams& p) {
  for (int r = blockIdx.x; r <= p.num_seqs; r += gridDim.x) {
    i64 first, last;
    unowned_rows(p.cu_seqlens_q, p.seqused_q, r, p.num_seqs, p.total_q, first, last);
    zero_rows(p.dq, p.dq_row_bytes, first, last);
    unowned_rows(p.cu_seqlens_k, p.seqused_k, r, p.num_seqs, p.total_k, first, last);
    zero_rows(p.dk, p.dk_row_bytes, first, last);
    zero_rows(p.dv, p.dv_row_bytes, first, last);
  }
}

// Sequence b's four maps (bwd_scheduler.cuh seq_map reads them), when it has rows on both sides:
// otherwise the main kernel loads nothing for it. One thread.
__device__ __forceinline__ void write_seq_maps(const PreParams& p, int b, i64 q_start, int seqlen_q) {
  const i64 k_start = p.cu_seqlens_k[b];
  const int seqlen_k = p.seqused_k != nullptr ? p.seqused_k[b] : p.cu_seqlens_k[b + 1] - p.cu_seqlens_k[b];
  if (seqlen_q <= 0 || seqlen_k <= 0) return;
  const TmaDesc* const templates[4] = {&p.q_map, &p.k_map, &p.v_map, &p.dout_map};
  const char* const dout = reinterpret_cast<const char*>(p.dout);
  const char* const bases[4] = {p.q_base + q_start * p.q_row_bytes, p.k_base + k_start * p.k_row_bytes,
                                p.v_base + k_start * p.v_row_bytes,
                                dout + q_start * p.do_stride_s * static_cast<i64>(sizeof(u16))};
  const u32 rows[4] = {static_cast<u32>(seqlen_q), static_cast<u32>(seqlen_k), static_cast<u32>(seqlen_k),
                       static_cast<u32>(seqlen_q)};
  tile_io::make_seq_maps<4>(p.seq_maps + 4 * b, templates, bases, rows);
}

}}}  // namespace fa3lite::attn::bwd

using namespace fa3lite::attn::bwd;

extern "C" __global__ void __launch_bounds__(kBlockThreads) fa3lite_bwd_preprocess(
    const __grid_constant__ PreParams p) {
  const unsigned blk = blockIdx.x;
  const int row_block = blk % p.row_blocks;
  const unsigned bh = blk / p.row_blocks;
  const int h = bh % p.num_heads;
  const int b = bh / p.num_heads;
  const int part = threadIdx.x % kThreadsPerRow;
  const int row = row_block * kRowsPerBlock + threadIdx.x / kThreadsPerRow;
  // Varlen: sequence b's rows start at q_start of the packed tensors (whose batch strides are 0).
  int seqlen_q = p.seqlen_q;
  i64 q_start = 0;
  if (p.cu_seqlens_q != nullptr) {
    q_start = p.cu_seqlens_q[b];
    seqlen_q = p.seqused_q != nullptr ? p.seqused_q[b] : p.cu_seqlens_q[b + 1] - p.cu_seqlens_q[b];
  }
  const i64 src_row = q_start + row;
  // The rows this sequence's query blocks cover (rows_pad with fixed lengths).
  const int rows = p.cu_seqlens_q != nullptr ? min(p.rows_pad, (seqlen_q + p.block_m - 1) / p.block_m * p.block_m)
                                             : p.rows_pad;

  float acc = 0.f;
  if (row < seqlen_q && part * 8 < kHeadDimVReal) {
    const uint4 dov = *reinterpret_cast<const uint4*>(
        p.dout + b * p.do_stride_b + src_row * p.do_stride_s + h * p.do_stride_h + part * 8);
    const uint4 ov = *reinterpret_cast<const uint4*>(
        p.out + b * p.o_stride_b + src_row * p.o_stride_s + h * p.o_stride_h + part * 8);
    acc = dot8(dov, ov);
  }
  // Every lane takes part (no early exit), so the full-warp shuffles are safe.
#pragma unroll
  for (int off = kThreadsPerRow / 2; off > 0; off /= 2) acc += math::shfl_xor(acc, off);

  if (part == 0 && row < p.rows_pad) {
    const i64 idx = static_cast<i64>(bh) * p.rows_pad + row;
    float l2 = __int_as_float(0x7f800000);   // +inf: P = 0 in this row
    if (row < seqlen_q) {
      const float l = p.lse[b * p.lse_stride_b + h * p.lse_stride_h + src_row * p.lse_stride_s];
      if (l != math::neg_inf()) l2 = l * math::kLog2e;
    }
    p.dpsum[idx] = acc;
    p.lse_log2[idx] = l2;
    if (p.dq_sem != nullptr && row % p.block_m == 0) {
      i32* const sems = p.dq_sem + (static_cast<i64>(bh) * (p.rows_pad / p.block_m) + row / p.block_m) * p.sems_per_block;
      for (int i = 0; i < p.sems_per_block; ++i) sems[i] = 0;
    }
  }
  if (p.dq_accum != nullptr && row < rows) {
    float4* const dst = reinterpret_cast<float4*>(
        p.dq_accum + (static_cast<i64>(bh) * p.rows_pad + row) * kHeadDim + part * 8);
    dst[0] = make_float4(0.f, 0.f, 0.f, 0.f);
    dst[1] = make_float4(0.f, 0.f, 0.f, 0.f);
  }
  if (p.tile_counter != nullptr && blk == 0 && threadIdx.x == 0) *p.tile_counter = 0;
  if (p.dq != nullptr) zero_unowned_rows(p);
  if (p.seq_maps != nullptr && h == 0 && row_block == 0 && threadIdx.x == 0) {
    write_seq_maps(p, b, q_start, seqlen_q);
  }
}
